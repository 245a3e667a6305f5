module github.com/cputime/cputime/goroutines

go 1.26.0

require (
	github.com/cputime/cputime v0.0.0-00010101000000-000000000000
	golang.org/x/exp v0.0.0-20261113113407-e3970619a1a4
	golang.org/x/sys v0.49.0
)
