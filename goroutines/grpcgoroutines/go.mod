module github.com/cputime/cputime/goroutines/grpcgoroutines

go 1.26.0

require (
	github.com/cputime/cputime/goroutines v0.0.0-00010101000000-000000000000
	google.golang.org/grpc v1.83.2
)

require (
	github.com/cputime/cputime v0.0.0-00010101000000-000000000000 // indirect
	golang.org/x/exp v0.0.0-20261113113407-e3970619a1a4 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260526163538-3dc84a4a5aaa // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
