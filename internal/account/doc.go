// Package account holds the rules that turn what the kernel reports about
// one task into the answers cputime gives, so that every reader (the root
// package's handles, one-shot calls and enumerations, the sampler, the
// recorder) gives the same answer for the same task in the same state:
//
//   - Rule splits a task's exact on-CPU time between user and kernel mode
//     in the ratio of its tick samples, as the kernel's cputime_adjust does,
//     as a pure function of the evidence; Split is one reader's memory that
//     keeps both parts from going backwards.
//   - Creation dates a start time in USER_HZ ticks since boot with one boot
//     offset per process (CLOCK_REALTIME − CLOCK_BOOTTIME), taken from the
//     narrowest of several bracketed readings and changed only when a clock
//     step or a suspend is confirmed by two of them.
//   - CheckRuntime and CheckStart refuse values the kernel could not have
//     produced, with an error wrapping ErrImpossible.
package account
