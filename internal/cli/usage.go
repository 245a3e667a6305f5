package cli

const usage = `usage: cputime [--json] [-H] [PID...]
       cputime COMMAND [ARG...]

With no PID, lists every process, most CPU time first (-H, --threads: with
each process's threads). With PIDs, shows each process and its threads.

Commands:
%COMMANDS%
"cputime help COMMAND" or "cputime COMMAND -h" shows a command's help;
"cputime completion bash" prints a bash completion script (zsh too).

  --json       print JSON: an array with one object per process (its
               threads with -H, or when PIDs are given; else "threads" is
               null)
  -H, --threads  list each process's threads (PIDs given: always)
  --version    print the version (as "cputime version")
  -h, --help   show this help

Times: USER and KERNEL are CPU time in user and kernel mode (exact total,
split in the kernel's sampled ratio); CREATED is the wall-clock start.
CYCLES is the cycle time in reference cycles (QueryThreadCycleTime,
QueryProcessCycleTime): on Linux exactly USER + KERNEL times the
reference frequency ("cputime cpus" shows it); on Windows a process's is
the system's own count, a thread's is derived from its times. Not core
cycles, and not to be converted to time.

Names are printed as ps prints them: control characters, invalid UTF-8
and invisible or bidi formatting characters become "?". JSON keeps them,
escaped. docs/cli.md describes every command, option and JSON field.
`

const runUsage = `usage: cputime run [--json] [-o FILE] [--tree] [--wait-orphans]
                   [--orphan-timeout D] [--trace FILE] [--timeline FILE]
                   [--] CMD [ARG...]

run starts CMD, waits for it, and prints its record with its exit time and
exact final times (on stderr, or to FILE), then exits with CMD's status.
The record's times are the top process's own; its TOTAL (total_user_ns,
total_kernel_ns) is the whole tree, CMD and the descendants it reaped, as
time(1) reports it (to 1 us), with the orphans run reaped as the tree's
subreaper (a daemon that double-forked). Like time -v, run also reports
how CMD ended (exit code, or signal and core dump), the wall time, %CPU,
the maximum RSS and the context switches. SIGTERM and SIGHUP are passed on
to CMD, SIGINT and SIGQUIT too unless the terminal sent them to CMD
itself; a SIGKILL of run leaves CMD running, as time(1) does.
The record ends when CMD exits: orphans still running then are counted
("Orphans still running", orphans_running), not waited for. With
--wait-orphans it ends when the whole tree has exited, as each run of
"cputime bench" does: run waits for the orphans (--orphan-timeout D: at
most D, a duration such as 30s; those left then are counted, not
killed), their times are in TOTAL, the recording follows them to their
exit, and the wall time is the tree's.
Output files are checked before CMD starts: each is written to a
temporary file beside it, renamed over it once whole (a device or FIFO is
written in place), so an existing file is untouched or wholly replaced.
run exits with CMD's status even where an output could not be written:
the error then goes to stderr, and so does the record. A file name that
begins with - is given with = (-o=-x).
Where the system allows it (Linux, perf_event_paranoid <= 2), run also
records every process and thread of the tree with creation, exit and final
times (to within a few us per context switch), even those that live under
a millisecond: "children" in the JSON (recursive, each with its threads),
and the processes that used the most CPU in the text; and where the
tree's CPU and memory went: by command name (processes, CPU, most alive
at once), the tree's peak memory (all processes at once: from a cgroup
run makes for it where it may, else sampled and said to be an estimate)
and how parallel it ran (tasks on a CPU, average and peak). --tree
requires the recording and lists every process and thread; --trace FILE
writes it as a Chrome trace (Perfetto), --timeline FILE as an HTML
timeline (processes collapsed into summary lanes, a CPU-over-time lane for
the tree, search, zoom and pan). On Windows, CMD runs in a job object of
its own: TOTAL is the job's accounting (every process ever in it, in clock
ticks) and "children" its processes, without their threads.

  --json           print the record as one JSON object
  -o, --output F   write the record to file F instead of stderr
  --tree           list every process and thread of the tree
  --wait-orphans   end the record when the whole tree has exited
  --orphan-timeout D  wait for the orphans at most D (implies
                   --wait-orphans)
  --trace F        write the recording as Chrome trace-event JSON (Perfetto)
  --timeline F     write the recording as an HTML timeline
  -h, --help       show this help
`

const waitUsage = `usage: cputime wait [--json] PID

wait waits until process PID, which need not be our child, exits, and
prints its final record, with the tree's total as far as a non-parent can
see it (its reaped descendants, in 10 ms ticks).

  --json      print the record as one JSON object
  -h, --help  show this help
`
