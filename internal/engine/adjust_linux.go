package engine

import "github.com/cputime/cputime/internal/account"

// The kernel knows a task's total on-CPU time to the nanosecond (the
// scheduler's sum_exec_runtime) but splits it between user and kernel mode
// only by sampling at timer ticks. One rule (account.Rule, the kernel's
// cputime_adjust without its memory) turns each kind of task's evidence
// into its split on every path: handles, one-shot calls, enumerations, the
// sampler, the recorder and the command. It is a pure function of what the
// kernel reports, so the same task in the same state gets the same answer
// from every path and in every process.
//
// What is kept between reads (a split) belongs to one handle, one sampler
// entry or one measured region, each bound to its task by something the
// kernel never hands to another task (a pidfd, an open /proc file, the
// calling thread or process itself), and only raises the pure answer so that
// neither part goes backwards. Nothing is keyed by an id, which a new task
// could inherit.

// evidence is what the kernel reports about one task at one moment.
type evidence = account.Evidence

// split is one reader's memory of the split it last reported.
type split = account.Split

// pfKthread is PF_KTHREAD: a kernel thread, all of whose time is kernel time.
const pfKthread = account.PFKthread

// splitRule is account.Rule: see there.
func splitRule(e evidence) (user, kernel uint64) { return account.Rule(e) }

// mulDiv is account.MulDiv.
func mulDiv(a, b, c uint64) uint64 { return account.MulDiv(a, b, c) }
