package cli

import (
	"fmt"
	"io"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	ucli "github.com/urfave/cli/v2"
)

// completionCommand is `petrel completion bash|zsh|fish`: a shell script that asks the
// binary itself for completions (urfave/cli's --generate-bash-completion), for
// commands, subcommands and flags.
func completionCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: source <(petrel completion bash)",
		ArgsUsage: "bash|zsh|fish",
		Description: "bash: source <(petrel completion bash), or save it as /etc/bash_completion.d/petrel\n" +
			"zsh:  source <(petrel completion zsh)\n" +
			"fish: petrel completion fish > ~/.config/fish/completions/petrel.fish",
		Action: runCompletion,
	}
}

func runCompletion(c *ucli.Context) error {
	shell, err := clientcmd.ExactlyOneArg(c, "shell (bash, zsh or fish)")
	if err != nil {
		return err
	}
	return writeCompletion(c.App, c.App.Writer, shell)
}

// writeCompletion writes the completion script for shell.
func writeCompletion(app *ucli.App, w io.Writer, shell string) error {
	switch shell {
	case "bash":
		_, err := io.WriteString(w, bashCompletion)
		return err
	case "zsh":
		_, err := io.WriteString(w, zshCompletion)
		return err
	case "fish":
		script, err := app.ToFishCompletion()
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, script)
		return err
	}
	return fmt.Errorf("no completion for shell %q: want bash, zsh or fish", shell)
}

// bashCompletion is urfave/cli's bash script, for the program petrel.
const bashCompletion = `# bash completion for petrel: source <(petrel completion bash)
_petrel_bash_autocomplete() {
  if [[ "${COMP_WORDS[0]}" != "source" ]]; then
    local cur opts
    COMPREPLY=()
    cur="${COMP_WORDS[COMP_CWORD]}"
    if [[ "$cur" == "-"* ]]; then
      opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "${cur}" --generate-bash-completion 2>/dev/null)
    else
      opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
    fi
    COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
    return 0
  fi
}
complete -o bashdefault -o default -F _petrel_bash_autocomplete petrel
`

// zshCompletion is urfave/cli's zsh script, for the program petrel.
const zshCompletion = `#compdef petrel
# zsh completion for petrel: source <(petrel completion zsh)
_petrel_zsh_autocomplete() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _petrel_zsh_autocomplete petrel
`
