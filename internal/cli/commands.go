package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cputime/cputime/internal/buildinfo"
	"github.com/cputime/cputime/internal/cliflag"
	"github.com/cputime/cputime/internal/suggest"
	"github.com/cputime/cputime/internal/top"
)

// command is one subcommand: what help, the suggestions and shell
// completion know of it, and what runs it. The table below is the one list
// of commands; help, completion, suggestions and dispatch all read it.
type command struct {
	name    string
	summary string
	help    func() string
	// flags are the options it takes; the ones that take a value end in
	// "=" followed by what completes it: "=file", "=pid", "=" (anything).
	flags []string
	// run runs it with the arguments after its name.
	run func(env Env, args []string) int
}

// listingFlags are the options of the command without a subcommand (the
// listing, or the records of the PIDs given).
var listingFlags = new(listingOptions).flags().Names()

// commands returns the subcommands, in the order help lists them. It is a
// function, not a variable, because help and completion, which it lists,
// read it in turn.
func commands() []command {
	return []command{
		{"run", "run a command; report its and its tree's CPU times, as time(1)",
			func() string { return runUsage }, new(runOptions).flags().Names(),
			runCommand},
		{"serve", "export CPU times as Prometheus metrics (runs cputime_exporter)",
			serveHelp, serveFlags, serveCommand},
		{"wait", "wait until a process exits and print its final record",
			func() string { return waitUsage }, new(waitOptions).flags().Names(),
			waitCommand},
		{"top", "live view of processes and threads with their exact CPU use",
			top.Usage, top.Flags(),
			func(env Env, args []string) int { return top.Run(env.Stdin, env.Stdout, env.Stderr, args) }},
		{"bench", "benchmark commands by their trees' exact CPU time, like hyperfine",
			func() string { return benchUsage }, new(benchOptions).flags().Names(), benchCommand},
		{"cpus", "the reference frequency and each CPU's idle cycles",
			func() string { return cpusUsage }, new(cpusOptions).flags().Names(),
			runCPUs},
		{"exits", "stream the final record of every task that exits (root, Linux)",
			func() string { return exitsUsage }, new(exitsOptions).flags().Names(),
			exitsCommand},
		{"completion", "print a shell completion script (bash or zsh)",
			func() string { return completionUsage }, []string{"bash", "zsh", "-h", "--help"},
			completionCommand},
		{"version", "print the version, revision and Go version of this binary",
			func() string { return versionUsage }, []string{"-h", "--help"},
			versionCommand},
		{"help", "show the help of a command",
			func() string { return helpUsage }, []string{"-h", "--help"},
			helpCommand},
	}
}

// parseOptions parses the options of the command cmd ("" for the
// listing) with s; done says the command ends there, with status (its help
// printed, or a usage error).
func parseOptions(env Env, cmd, usage string, s *cliflag.Set, args []string) (rest []string, status int, done bool) {
	rest, err := s.Parse(args)
	switch {
	case errors.Is(err, cliflag.ErrHelp):
		fmt.Fprint(env.Stdout, usage)
		return nil, exitOK, true
	case err != nil && cmd == "":
		// The listing's usage is the whole overview: point to it instead.
		fmt.Fprintf(env.Stderr, "%s: %v\n(\"cputime -h\" shows the options)\n", programName, err)
		return nil, exitUsage, true
	case err != nil:
		fmt.Fprintf(env.Stderr, "%s: %s: %v\n%s", programName, cmd, err, usage)
		return nil, exitUsage, true
	}
	return rest, 0, false
}

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// flagNames are the names of flags, without what completes their values.
func flagNames(flags []string) []string {
	out := make([]string, len(flags))
	for i, f := range flags {
		out[i], _, _ = strings.Cut(f, "=")
	}
	return out
}

const helpUsage = `usage: cputime help [COMMAND]

Shows the help of COMMAND, or with no COMMAND the overview of every command.
"cputime COMMAND -h" (or --help) shows the same.
`

const versionUsage = `usage: cputime version
       cputime --version

Prints the module version (v0.x.y when installed with "go install
github.com/cputime/cputime/cmd/cputime@v0.x.y", "(devel)" from a checkout),
the VCS revision it was built from ("+dirty" for a work tree with changes,
"unknown" where the go command stamped none), the Go version that built it,
and the operating system and architecture.
`

const completionUsage = `usage: cputime completion bash|zsh

Prints a script that completes cputime's commands, options, PIDs and files
in the shell named. To use it now:
  source <(cputime completion bash)           # bash
  source <(cputime completion zsh)            # zsh
To install it, write it where the shell looks for completions:
  cputime completion bash > /etc/bash_completion.d/cputime
  cputime completion zsh > "${fpath[1]}/_cputime"
`

// helpCommand implements "cputime help [COMMAND]".
func helpCommand(env Env, args []string) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(env.Stdout, usageText())
		return exitOK
	case len(args) > 1:
		fmt.Fprintf(env.Stderr, "%s: help: want one command, got %d words\n%s", programName, len(args), helpUsage)
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(env.Stdout, helpUsage)
		return exitOK
	}
	c, ok := findCommand(args[0])
	if !ok {
		fmt.Fprintf(env.Stderr, "%s: help: unknown command %q%s\n", programName, sanitize(args[0]), didYouMean(args[0], commandNames()))
		return exitUsage
	}
	fmt.Fprint(env.Stdout, c.help())
	return exitOK
}

// versionCommand implements "cputime version" and "cputime --version".
func versionCommand(env Env, args []string) int {
	for _, a := range args {
		if a == "-h" || a == "--help" {
			fmt.Fprint(env.Stdout, versionUsage)
			return exitOK
		}
		fmt.Fprintf(env.Stderr, "%s: version: unexpected argument %s\n%s", programName, sanitize(a), versionUsage)
		return exitUsage
	}
	fmt.Fprintln(env.Stdout, buildinfo.Read().String())
	return exitOK
}

func commandNames() []string {
	cs := commands()
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

// unknownCommand is the error for a first word that is neither a PID nor a
// command.
func unknownCommand(env Env, word string) int {
	fmt.Fprintf(env.Stderr, "%s: unknown command %q%s\n(\"cputime help\" lists the commands; a PID is a positive decimal number)\n",
		programName, sanitize(word), didYouMean(word, commandNames()))
	return exitUsage
}

// unknownOption is the sentence for an option cmd does not take (cmd ""
// for the listing): with the closest of its options, if one is close.
func unknownOption(cmd, opt string) string {
	flags := listingFlags
	prefix := ""
	if c, ok := findCommand(cmd); ok {
		flags, prefix = c.flags, cmd+": "
	}
	name, _, _ := strings.Cut(opt, "=")
	return fmt.Sprintf("%sunknown option %s%s", prefix, sanitize(opt), didYouMean(name, flagNames(flags)))
}

// didYouMean is "; did you mean "X"?" for the candidate closest to word,
// or "".
func didYouMean(word string, candidates []string) string { return suggest.DidYouMean(word, candidates) }
