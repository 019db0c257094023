//go:build !race

package record

const raceDetector = false
