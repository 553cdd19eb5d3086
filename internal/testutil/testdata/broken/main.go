// Command broken does not compile: the launcher's tests build it to see
// the compiler's output reach the test.
package main

func main() {
	var n int = "not a number"
	_ = n
}
