package main

import (
	"context"
	_ "embed"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/apps"
)

// viewURI is the forecast page, the UI resource both tools link to.
const viewURI = "ui://forecast/view.html"

// viewHTML is the page: one self-contained document (inline CSS and
// script, nothing fetched) that speaks the extension's postMessage
// protocol with its host.
//
//go:embed view.html
var viewHTML string

// ForecastArgs are the arguments of the forecast tool.
type ForecastArgs struct {
	City string `json:"city" jsonschema:"the city to forecast"`
	Days int    `json:"days,omitempty" jsonschema:"how many days, 1 to 7 (default 5)"`
}

// Forecast is the structured result of the forecast tool: what the page
// renders.
type Forecast struct {
	City string `json:"city"`
	Days []Day  `json:"days"`
}

// Day is one day of a forecast.
type Day struct {
	Day        int    `json:"day"`
	HighC      int    `json:"highC"`
	LowC       int    `json:"lowC"`
	Conditions string `json:"conditions"`
}

// DayArgs are the arguments of forecast_day, which the page calls.
type DayArgs struct {
	City string `json:"city"`
	Day  int    `json:"day" jsonschema:"the day of the forecast, from 1"`
}

// DayDetail is the structured result of forecast_day: the temperature
// every three hours.
type DayDetail struct {
	City  string `json:"city"`
	Day   int    `json:"day"`
	Hours []Hour `json:"hours"`
}

// Hour is one reading of a DayDetail.
type Hour struct {
	Hour  int `json:"hour"`
	TempC int `json:"tempC"`
}

var conditions = [...]string{"sunny", "partly cloudy", "cloudy", "showers", "windy"}

// seed makes the made-up weather of a city the same on every call.
func seed(city string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(strings.TrimSpace(city))))
	return h.Sum32()
}

// forecast is the made-up forecast of city for n days.
func forecast(city string, n int) Forecast {
	s := seed(city)
	base := 8 + int(s%18)
	f := Forecast{City: city, Days: make([]Day, n)}
	for d := range n {
		high := base + int((s>>(3*d))%7) - 3
		f.Days[d] = Day{Day: d + 1, HighC: high, LowC: high - 5 - int((s>>(2*d))%4), Conditions: conditions[(s>>(5*d))%uint32(len(conditions))]}
	}
	return f
}

// detail is the made-up day d of city's forecast, every three hours.
func detail(city string, d int) DayDetail {
	day := forecast(city, d).Days[d-1]
	out := DayDetail{City: city, Day: d}
	// Coldest before dawn, warmest mid-afternoon.
	for i, w := range [...]int{1, 0, 1, 4, 8, 10, 7, 3} {
		out.Hours = append(out.Hours, Hour{Hour: 3 * i, TempC: day.LowC + (day.HighC-day.LowC)*w/10})
	}
	return out
}

// outputSchema is the JSON Schema of T, for a tool's outputSchema.
func outputSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err)
	}
	return s
}

// newServer returns the forecast server: the page, the forecast tool
// that the model calls and the page renders, and forecast_day, which
// only the page calls.
func newServer() *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "forecast", Title: "Forecast", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions: "Call forecast to show a city's weather; hosts that render MCP Apps show it as a chart.",
		Capabilities: apps.ServerCapabilities(nil),
	})
	border := true
	apps.AddResource(srv, &apps.Resource{
		URI: viewURI, Name: "forecast-view", Title: "Forecast view",
		Description: "A chart and table of a forecast, with the hours of the selected day.",
		HTML:        viewHTML,
		// The page fetches nothing and needs no browser feature: the
		// restrictive default policy is enough, so no CSP is declared.
		Meta: apps.ResourceMeta{PrefersBorder: &border},
	})
	mcp.AddTypedTool(srv, apps.Link(&mcp.Tool{
		Name: "forecast", Title: "Forecast",
		Description:  "The weather forecast of a city for the next days.",
		OutputSchema: outputSchema[Forecast](),
	}, apps.ToolMeta{ResourceURI: viewURI}), forecastTool)
	mcp.AddTypedTool(srv, apps.Link(&mcp.Tool{
		Name: "forecast_day", Title: "Forecast of one day",
		Description:  "The temperature every three hours of one day of a forecast (called by the forecast view).",
		OutputSchema: outputSchema[DayDetail](),
	}, apps.ToolMeta{ResourceURI: viewURI, Visibility: []apps.Visibility{apps.VisibleToApp}}), dayTool)
	return srv
}

// forecastTool answers every client with the forecast as text and as
// structuredContent. A host that renders the page shows the days there,
// so its text is a summary; any other client gets the days as text.
func forecastTool(ctx context.Context, req *mcp.CallToolRequest, in ForecastArgs) (*mcp.CallToolResult, error) {
	if strings.TrimSpace(in.City) == "" {
		return mcp.ErrorResult("city is required"), nil
	}
	if in.Days == 0 {
		in.Days = 5
	}
	if in.Days < 1 || in.Days > 7 {
		return mcp.ErrorResult("days must be from 1 to 7"), nil
	}
	f := forecast(in.City, in.Days)
	var b strings.Builder
	fmt.Fprintf(&b, "%s, next %d days: highs %d to %d °C.", f.City, len(f.Days), minHigh(f), maxHigh(f))
	if !apps.ClientSupports(req.Meta.ClientCapabilities) {
		for _, d := range f.Days {
			fmt.Fprintf(&b, "\nDay %d: %s, %d/%d °C", d.Day, d.Conditions, d.HighC, d.LowC)
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}, StructuredContent: f}, nil
}

func dayTool(ctx context.Context, req *mcp.CallToolRequest, in DayArgs) (*mcp.CallToolResult, error) {
	if strings.TrimSpace(in.City) == "" || in.Day < 1 || in.Day > 7 {
		return mcp.ErrorResult("city and a day from 1 to 7 are required"), nil
	}
	d := detail(in.City, in.Day)
	var b strings.Builder
	fmt.Fprintf(&b, "%s, day %d:", d.City, d.Day)
	for _, h := range d.Hours {
		fmt.Fprintf(&b, " %02d:00 %d °C;", h.Hour, h.TempC)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimSuffix(b.String(), ";")}}, StructuredContent: d}, nil
}

func minHigh(f Forecast) int {
	m := f.Days[0].HighC
	for _, d := range f.Days {
		m = min(m, d.HighC)
	}
	return m
}

func maxHigh(f Forecast) int {
	m := f.Days[0].HighC
	for _, d := range f.Days {
		m = max(m, d.HighC)
	}
	return m
}
