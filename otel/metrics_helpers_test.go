package otel

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// metricNamed returns the metric called name, and whether it exists.
func metricNamed(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// matches reports whether set has every attribute of want.
func matches(set attribute.Set, want map[attribute.Key]string) bool {
	for k, v := range want {
		got, ok := set.Value(k)
		if !ok || got.String() != v {
			return false
		}
	}
	return true
}

// sumOf adds up the points of the counter (or up/down counter) name
// whose attributes include want.
func sumOf(t testing.TB, rm metricdata.ResourceMetrics, name string, want map[attribute.Key]string) int64 {
	t.Helper()
	m, ok := metricNamed(rm, name)
	if !ok {
		return 0
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is a %T, want an int64 sum", name, m.Data)
	}
	var n int64
	for _, p := range s.DataPoints {
		if matches(p.Attributes, want) {
			n += p.Value
		}
	}
	return n
}

// histPoints returns the points of the histogram name whose attributes
// include want.
func histPoints[N int64 | float64](t testing.TB, rm metricdata.ResourceMetrics, name string, want map[attribute.Key]string) []metricdata.HistogramDataPoint[N] {
	t.Helper()
	m, ok := metricNamed(rm, name)
	if !ok {
		return nil
	}
	h, ok := m.Data.(metricdata.Histogram[N])
	if !ok {
		t.Fatalf("%s is a %T", name, m.Data)
	}
	var out []metricdata.HistogramDataPoint[N]
	for _, p := range h.DataPoints {
		if matches(p.Attributes, want) {
			out = append(out, p)
		}
	}
	return out
}

// histCount is the number of values recorded in the float histogram
// name with attributes including want.
func histCount(t testing.TB, rm metricdata.ResourceMetrics, name string, want map[attribute.Key]string) uint64 {
	t.Helper()
	var n uint64
	for _, p := range histPoints[float64](t, rm, name, want) {
		n += p.Count
	}
	return n
}

// pointSets returns the attribute sets of every point of m.
func pointSets(m metricdata.Metrics) []attribute.Set {
	var out []attribute.Set
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	case metricdata.Gauge[float64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	}
	return out
}
