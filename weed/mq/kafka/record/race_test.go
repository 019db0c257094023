//go:build race

package record

// raceDetector: the race detector's instrumentation allocates on its own,
// so allocation counts are checked only without it (the test command
// runs this package both ways).
const raceDetector = true
