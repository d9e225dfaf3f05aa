// Package launch runs an inference server as a child process and measures its
// start-up. It sits on the server side of the pipeline: cmd and bench call it to
// get a server that is really ready, and the result is a Startup that
// goes into results.json as server.startup.
//
// The lifecycle is Start -> WaitReady -> (benchmark) -> Stop:
//
//   - Start spawns Spec.Command in its own process group, sends stdout and
//     stderr to Spec.LogPath and parses them live (ParseLog's patterns), and
//     ties the child to ctx: when ctx is done the server is stopped.
//   - WaitReady polls every Spec.PollInterval for the phases port open,
//     /health 200, model listed in /v1/models and a first 1-token completion,
//     and returns their times since spawn plus the facts read from the log.
//   - Exited and ExitErr report a server that dies mid-run.
//   - Stop sends SIGINT, SIGTERM and SIGKILL to the whole group with bounded
//     waits, and returns only when no process of the group is left.
//
// Presets (PresetSpecFor) know the usual command line, port and health path of
// vLLM, SGLang, TGI, llama.cpp and servebench's bundled engine.
//
// Only Unix is supported: process groups and signals are used directly.
package launch
