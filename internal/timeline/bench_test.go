package timeline

import (
	"io"
	"testing"
)

// The writers on 4,000 threads in 500 processes.
func BenchmarkWriteTrace(b *testing.B) {
	r := bigRecording(4000, 8)
	for b.Loop() {
		if err := WriteTrace(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteHTML(b *testing.B) {
	r := bigRecording(4000, 8)
	for b.Loop() {
		if err := WriteHTML(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}
