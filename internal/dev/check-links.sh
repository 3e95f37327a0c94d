#!/bin/sh
# Checks every relative link in the repository's Markdown files: the file (or folder) exists,
# and an anchor is a heading of the target (GitHub's slug) or an <a id>. Prints the broken ones
# and the counts; exits 1 if any is broken. Run from anywhere: sh internal/dev/check-links.sh
set -u
cd "$(git rev-parse --show-toplevel)" || exit 2
export LC_ALL=C
anchors() { # the anchors of Markdown file $1, one per line
	awk '/^```/ { code = !code } !code && /^#+ / { sub(/^#+ +/, ""); print }' "$1" |
		tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g' |
		awk '{ n = seen[$0]++; print (n ? $0 "-" n : $0) }'
	grep -o '<a id="[^"]*"' "$1" | sed 's/<a id="//; s/"$//'
}
checked=0 broken=0
for f in $(git ls-files '*.md'); do
	dir=$(dirname "$f")
	for link in $(grep -o '](\([^) ]*\)' "$f" | sed 's/^](//'); do
		case $link in http://* | https://* | mailto:*) continue ;; esac
		checked=$((checked + 1))
		path=${link%%#*} frag=
		case $link in *'#'*) frag=${link#*#} ;; esac
		target=$f
		[ -n "$path" ] && target=$dir/$path
		if [ ! -e "$target" ]; then
			echo "$f: $link: no such file"; broken=$((broken + 1)); continue
		fi
		if [ -n "$frag" ] && [ -f "$target" ] && ! anchors "$target" | grep -qxF -e "$frag"; then
			echo "$f: $link: no such anchor"; broken=$((broken + 1))
		fi
	done
done
echo "links checked: $checked, broken: $broken"
[ "$broken" -eq 0 ]
