#!/usr/bin/env bash
# check-layers.sh: the layer table of docs/ARCHITECTURE.md, enforced. Each module may
# include only its own headers and those of the modules listed for it here; a new include
# across layers fails CI until this table (and the architecture doc) say it is intended.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A allowed=(
	[util]=""
	[net]="util"
	[http]="util net"
	[s3]="util http object"
	[object]="util erasure"
	[erasure]="util drive"
	[drive]="util"
	[cluster]="util"
	[client]="util"
	[bench]="util client"
	[cli]="util net http s3 object cluster client bench"
	[bin]="cli"
)
bad=0
for dir in src/*/; do
	mod=$(basename "$dir")
	if [[ -z ${allowed[$mod]+x} ]]; then
		echo "check-layers: module src/$mod is not in the layer table (scripts/check-layers.sh)"
		bad=1
		continue
	fi
	while IFS=: read -r file inc; do
		dep=${inc%%/*}
		[[ $dep == "$mod" ]] && continue
		if [[ " ${allowed[$mod]} " != *" $dep "* ]]; then
			echo "check-layers: $file includes \"$inc\": $mod may not depend on $dep"
			bad=1
		fi
	done < <(grep -HoE '^#include "[a-z_]+/[^"]+"' "$dir"*.[ch] 2>/dev/null | sed -E 's/#include "([^"]+)"/\1/')
done
[[ $bad -eq 0 ]] && echo "check-layers: ok"
exit $bad
