package cli

import (
	"fmt"
	"strings"
)

// completionCommand implements "cputime completion bash|zsh".
func completionCommand(env Env, args []string) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(env.Stdout, completionUsage)
		return exitOK
	}
	if len(args) != 1 {
		fmt.Fprintf(env.Stderr, "%s: completion: want one shell, bash or zsh\n%s", programName, completionUsage)
		return exitUsage
	}
	switch args[0] {
	case "bash":
		fmt.Fprint(env.Stdout, bashCompletion())
	case "zsh":
		fmt.Fprint(env.Stdout, zshCompletion())
	default:
		fmt.Fprintf(env.Stderr, "%s: completion: unknown shell %q%s (bash and zsh are supported)\n",
			programName, sanitize(args[0]), didYouMean(args[0], []string{"bash", "zsh"}))
		return exitUsage
	}
	return exitOK
}

// valueFlags returns, for the flags of every command, the ones that take a
// value grouped by what completes it: "file", "pid", or "" (nothing).
func valueFlags() map[string][]string {
	out := map[string][]string{}
	seen := map[string]bool{}
	for _, c := range commands() {
		for _, f := range c.flags {
			name, kind, ok := strings.Cut(f, "=")
			if ok && !seen[name] {
				seen[name] = true
				out[kind] = append(out[kind], name)
			}
		}
	}
	return out
}

// bashCompletion is the bash script, generated from the command table so
// that it knows every command and option this binary has.
func bashCompletion() string {
	var cases strings.Builder
	for _, c := range commands() {
		fmt.Fprintf(&cases, "        %s) opts=%q ;;\n", c.name, strings.Join(flagNames(c.flags), " "))
	}
	vf := valueFlags()
	return `# bash completion for cputime ("cputime completion bash").
# Use it now:  source <(cputime completion bash)
# Install it:  cputime completion bash > /etc/bash_completion.d/cputime
_cputime_pids() {
    local d
    for d in /proc/[0-9]*; do printf '%s\n' "${d#/proc/}"; done
}
_cputime() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local cmd="" i w args=0
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ -z $cmd && $w != -* && ! $w =~ ^[0-9]+$ ]]; then
            cmd=$w
        elif [[ -n $cmd && $w != -* ]]; then
            case ${COMP_WORDS[i-1]} in ` + strings.Join(append(append([]string{}, vf["file"]...), append(vf["pid"], vf[""]...)...), "|") + `) ;; *) args=$((args + 1)) ;; esac
        fi
    done
    case $prev in
    ` + strings.Join(vf["file"], "|") + `)
        COMPREPLY=($(compgen -f -- "$cur")); return ;;
    ` + strings.Join(vf["pid"], "|") + `)
        COMPREPLY=($(compgen -W "$(_cputime_pids)" -- "$cur")); return ;;
    ` + strings.Join(vf[""], "|") + `)
        COMPREPLY=(); return ;;
    esac
    local opts=""
    case $cmd in
    "") opts=` + fmt.Sprintf("%q", strings.Join(listingFlags, " ")) + `
        if [[ $cur != -* ]]; then
            COMPREPLY=($(compgen -W "` + strings.Join(commandNames(), " ") + ` $(_cputime_pids)" -- "$cur"))
            return
        fi ;;
` + cases.String() + `    esac
    case $cmd in
    run)
        # CMD, then its arguments (files).
        if ((args > 0)); then COMPREPLY=($(compgen -f -- "$cur")); return; fi
        if [[ $cur != -* ]]; then COMPREPLY=($(compgen -c -- "$cur")); return; fi ;;
    wait)
        if [[ $cur != -* ]]; then COMPREPLY=($(compgen -W "$(_cputime_pids)" -- "$cur")); return; fi ;;
    help)
        COMPREPLY=($(compgen -W "` + strings.Join(commandNames(), " ") + `" -- "$cur")); return ;;
    esac
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _cputime cputime
`
}

// zshCompletion is the zsh script: a completion function for compsys.
func zshCompletion() string {
	var cmds, cases strings.Builder
	for _, c := range commands() {
		fmt.Fprintf(&cmds, "    %s\n", zshQuote(c.name+":"+c.summary))
		fmt.Fprintf(&cases, "    %s) opts=(%s) ;;\n", c.name, strings.Join(flagNames(c.flags), " "))
	}
	vf := valueFlags()
	return `#compdef cputime
# zsh completion for cputime ("cputime completion zsh").
# Use it now:  source <(cputime completion zsh)
# Install it:  cputime completion zsh > "${fpath[1]}/_cputime"
_cputime() {
  local -a commands opts pids
  commands=(
` + cmds.String() + `  )
  pids=(/proc/<->(N:t))
  local cmd="" i args=0
  for ((i = 2; i < CURRENT; i++)); do
    if [[ -z $cmd && $words[i] != -* && $words[i] != <-> ]]; then
      cmd=$words[i]
    elif [[ -n $cmd && $words[i] != -* ]]; then
      case $words[i-1] in
        ` + strings.Join(append(append([]string{}, vf["file"]...), append(vf["pid"], vf[""]...)...), "|") + `) ;;
        *) ((args++)) ;;
      esac
    fi
  done
  case $words[CURRENT-1] in
    ` + strings.Join(vf["file"], "|") + `) _files; return ;;
    ` + strings.Join(vf["pid"], "|") + `) compadd -a pids; return ;;
    ` + strings.Join(vf[""], "|") + `) return ;;
  esac
  case $cmd in
    "") opts=(` + strings.Join(listingFlags, " ") + `)
      if [[ $PREFIX != -* ]]; then
        _describe -t commands 'cputime command' commands
        compadd -a pids
        return
      fi ;;
` + cases.String() + `  esac
  case $cmd in
    run) (( args > 0 )) && { _files; return }
      [[ $PREFIX != -* ]] && { _command_names -e; return } ;;
    wait) [[ $PREFIX != -* ]] && { compadd -a pids; return } ;;
    help) _describe -t commands 'cputime command' commands; return ;;
  esac
  compadd -a opts
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _cputime "$@"
else
  compdef _cputime cputime
fi
`
}

// zshQuote quotes s for zsh in single quotes, escaping ':' as _describe
// wants in the description.
func zshQuote(s string) string {
	name, desc, _ := strings.Cut(s, ":")
	return "'" + strings.ReplaceAll(name+":"+strings.ReplaceAll(desc, ":", `\:`), "'", `'\''`) + "'"
}
