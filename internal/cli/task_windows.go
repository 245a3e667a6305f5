package cli

import "github.com/cputime/cputime"

// processOfThread returns the process of thread id when id names a thread
// (Windows gives threads and processes ids from one table, so an id is
// never both), else 0. It takes a snapshot: it runs only on error paths.
func processOfThread(id int) int {
	for t, err := range cputime.AllThreads() {
		if err == nil && t.ID == id && t.ProcessID != id {
			return t.ProcessID
		}
	}
	return 0
}
