"""Shell completion that completes model names whole: ``openai-chat:gp<Tab>``.

bash splits the line into words at the characters of ``COMP_WORDBREAKS``, ``:``
among them, so ``openai-chat:gp`` reaches a completion function as three words
(``openai-chat``, ``:``, ``gp``) and whatever it offers replaces ``gp`` alone.
click's bash script passes the split words on as they are: the program then
completes ``gp`` (nothing), or an offer of ``openai-chat:gpt-4.1`` would be put in
place of ``gp``, giving ``openai-chat:openai-chat:gpt-4.1``.

The script emitted here joins the pieces again where no blank separates them in
the line (so the program completes the word typed, as click expects), then takes
off each offer the part before bash's own word (bash-completion's
``__ltrim_colon_completions``, written out, so the bash-completion package need
not be installed). An offer that ends with ``:`` (a provider prefix) gets no space
after it: the name follows. The program's side is click's own, unchanged.

zsh completes whole words already; its script is click's, with the offers that end
with ``:`` added with no suffix (``compadd -S ''``) for the same reason, and, in
``--model=offl``, the option set aside (``compset -P``) and kept (``-i "$IPREFIX"``:
click's ``-U`` replaced the whole word with the value).

fish's script is click's with two fixes: an offer is split from its description at
the first comma only (click's split at every comma cut ``Attach, offer to resume``
to ``Attach``), and in ``--model=offl`` the option is put back before each offer, as
fish matches the offers against the whole word.
"""

from __future__ import annotations

from typing import ClassVar

from click.shell_completion import (
    BashComplete,
    FishComplete,
    ZshComplete,
    add_completion_class,
)

SOURCE_BASH = """\
%(complete_func)s() {
    local IFS=$'\\n'
    local response completion type value words=() cword=-1 i word rest=$COMP_LINE
    local cur taken_off option=

    # The words up to the cursor, the pieces bash split at ':' and '=' joined again.
    for ((i = 0; i <= COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if ((cword >= 0)) && [[ $rest != [[:blank:]]* ]] \\
            && [[ $word == [:=]* || ${words[cword]} == *[:=] ]]; then
            words[cword]+=$word
        else
            words+=("$word")
            cword=$((${#words[@]} - 1))
        fi
        rest=${rest#"${rest%%%%[![:blank:]]*}"}
        rest=${rest#"$word"}
    done
    # What bash will replace is its own word (nothing, right after a ':' or '='): the
    # offers lose what comes before it. An offer for `--model=op` is the value alone
    # (click splits the option off): the option is put back first.
    cur=${COMP_WORDS[COMP_CWORD]}
    [[ -z ${cur//[:=]/} ]] && cur=
    taken_off=${words[cword]%%"$cur"}
    [[ ${words[cword]} == -*=* ]] && option=${words[cword]%%%%=*}=

    response=$(env COMP_WORDS="${words[*]}" COMP_CWORD=$cword \\
%(complete_var)s=bash_complete $1)

    for completion in $response; do
        IFS=',' read type value <<< "$completion"

        if [[ $type == 'dir' ]]; then
            COMPREPLY=()
            compopt -o dirnames
        elif [[ $type == 'file' ]]; then
            COMPREPLY=()
            compopt -o default
        elif [[ $type == 'plain' ]]; then
            [[ $value == *: ]] && compopt -o nospace
            value=$option$value
            value=${value#"$taken_off"}
            [[ -n $value ]] && COMPREPLY+=("$value")
        fi
    done

    return 0
}

%(complete_func)s_setup() {
    complete -o nosort -F %(complete_func)s %(prog_name)s
}

%(complete_func)s_setup;
"""

SOURCE_ZSH = """\
#compdef %(prog_name)s

%(complete_func)s() {
    local -a completions
    local -a completions_with_descriptions
    local -a prefixes
    local -a prefixes_with_descriptions
    local -a response
    (( ! $+commands[%(prog_name)s] )) && return 1
    # `--model=offl`: the offers (the value alone) replace what follows the `=`; -U
    # alone would drop the option too, hence -i "$IPREFIX" with each -U below.
    [[ $PREFIX == -*=* ]] && compset -P 1 '*='

    response=("${(@f)$(env COMP_WORDS="${words[*]}" COMP_CWORD=$((CURRENT-1)) \\
%(complete_var)s=zsh_complete %(prog_name)s)}")

    for type key descr in ${response}; do
        if [[ "$type" == "plain" ]]; then
            # A provider prefix (``openai-chat:``) is followed by the name: no space.
            if [[ "$key" == *: && "$descr" == "_" ]]; then
                prefixes+=("$key")
            elif [[ "$key" == *: ]]; then
                prefixes_with_descriptions+=("$key":"$descr")
            elif [[ "$descr" == "_" ]]; then
                completions+=("$key")
            else
                completions_with_descriptions+=("$key":"$descr")
            fi
        elif [[ "$type" == "dir" ]]; then
            _path_files -/
        elif [[ "$type" == "file" ]]; then
            _path_files -f
        fi
    done

    if [ -n "$completions_with_descriptions" ]; then
        _describe -V unsorted completions_with_descriptions -U -i "$IPREFIX"
    fi
    if [ -n "$prefixes_with_descriptions" ]; then
        _describe -V unsorted prefixes_with_descriptions -U -i "$IPREFIX" -S ''
    fi

    if [ -n "$completions" ]; then
        compadd -U -i "$IPREFIX" -V unsorted -a completions
    fi
    if [ -n "$prefixes" ]; then
        compadd -U -i "$IPREFIX" -V unsorted -S '' -a prefixes
    fi
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    # autoload from fpath, call function directly
    %(complete_func)s "$@"
else
    # eval/source/. command, register function for later
    compdef %(complete_func)s %(prog_name)s
fi
"""


SOURCE_FISH = """\
function %(complete_func)s;
    set -l option ''
    # `--model=offl`: fish matches the offers against the whole word, option included.
    if string match -q -- '-*=*' (commandline -ct)
        set option (string split -m 1 = -- (commandline -ct))[1]=
    end
    set -l response (env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp) \
COMP_CWORD=(commandline -t) %(prog_name)s);

    for completion in $response;
        set -l metadata (string split -m 1 "," -- $completion);

        if test $metadata[1] = "dir";
            __fish_complete_directories $metadata[2] | string replace -r -- '^' $option;
        else if test $metadata[1] = "file";
            __fish_complete_path $metadata[2] | string replace -r -- '^' $option;
        else if test $metadata[1] = "plain";
            echo $option$metadata[2];
        end;
    end;
end;

complete --no-files --command %(prog_name)s --arguments "(%(complete_func)s)";
"""


class WholeWordBashComplete(BashComplete):
    """click's bash completion, with words split at ``:`` joined again (see the module)."""

    source_template: ClassVar[str] = SOURCE_BASH


class PrefixZshComplete(ZshComplete):
    """click's zsh completion, with no space after a provider prefix (see the module)."""

    source_template: ClassVar[str] = SOURCE_ZSH


class WholeDescriptionFishComplete(FishComplete):
    """click's fish completion, with descriptions whole and ``--option=value`` kept."""

    source_template: ClassVar[str] = SOURCE_FISH


def use_whole_word_completion() -> None:
    """Make ``_AGENT_ASSIST_COMPLETE=bash_source``, ``zsh_source`` and ``fish_source``
    emit the scripts above."""
    add_completion_class(WholeWordBashComplete, "bash")
    add_completion_class(PrefixZshComplete, "zsh")
    add_completion_class(WholeDescriptionFishComplete, "fish")
