//go:build !linux

package top

// memReader knows no resident memory outside Linux: RES shows "-", and M
// sorts by TIME+ among equals.
type memReader struct{}

func (*memReader) rss(int) int64 { return -1 }
