// Package kernel holds the Linux task primitives that more than one reader
// needs (the root package's handles and scans, the sampler): reading CPU
// clocks by id, and asking a pidfd whether its task still runs.
package kernel
