// Command servebench benchmarks LLM inference servers from both ends at once:
// what the client sees and what the engine reports on /metrics.
package main

import "os"

func main() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) }
