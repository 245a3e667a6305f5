// Package grpcgoroutines runs each gRPC call a server handles inside a
// runtime/trace task whose type is the call's full method name
// ("/package.Service/Method"), so that a goroutines.Watcher counts the
// CPU and the calls per method, as goroutines.Middleware does per HTTP
// route:
//
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(grpcgoroutines.UnaryServerInterceptor()),
//		grpc.ChainStreamInterceptor(grpcgoroutines.StreamServerInterceptor()),
//	)
//
// A handler's context carries the task: goroutines.TaskCPU works inside
// it, and trace.WithRegion with that context on other goroutines counts
// for the method too. The methods are the server's, so the types are
// bounded; calls of unknown methods reach an interceptor only through an
// UnknownServiceHandler, and a Watcher counts types past its limit as one.
package grpcgoroutines

import (
	"context"

	"github.com/cputime/cputime/goroutines"
	"google.golang.org/grpc"
)

// UnaryServerInterceptor runs each unary call in a task typed by its method.
func UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, task := goroutines.NewTask(ctx, info.FullMethod)
		defer task.End()
		return handler(ctx, req)
	}
}

// StreamServerInterceptor runs each streaming call in a task typed by its
// method, for the call's whole life.
func StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, task := goroutines.NewTask(ss.Context(), info.FullMethod)
		defer task.End()
		return handler(srv, &stream{ss, ctx})
	}
}

type stream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *stream) Context() context.Context { return s.ctx }
