#!/bin/sh
# A stand-in "model" for `kforge optimize --llm command:...`: ignores the prompt on stdin and
# replies with the candidate file $1 in a fenced block, so the LLM stage can be exercised on a
# GPU machine without network access: --llm "command:bench/fenced_reply.sh CANDIDATE.py"
cat >/dev/null
printf 'Here is the program.\n\n```python\n'
cat "$1"
printf '```\n'
