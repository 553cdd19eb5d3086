// Command announce plays a server for the launcher's tests: it writes
// -say as its first line on standard output (nothing when empty) and -stderr on standard
// error, then exits when -exit is set and runs for an hour otherwise.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	say := flag.String("say", "listening on http://127.0.0.1:1/mcp", "first line on standard output")
	stderr := flag.String("stderr", "", "text for standard error")
	exit := flag.Bool("exit", false, "exit after writing")
	flag.Parse()
	fmt.Fprintln(os.Stderr, *stderr)
	if *say != "" {
		fmt.Println(*say)
		fmt.Println("more output after the first line")
	}
	if *exit {
		return
	}
	time.Sleep(time.Hour)
}
