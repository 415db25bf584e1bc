#!/bin/sh
# src/base/params.def and the table of doc/params.md list the same parameters with
# the same type and default.  A row looks like
#     | `HIAR_DEBUG` | enum | `WARN` | Log level ... |
# (backticks optional; an empty default may be written "", "(empty)" or "-").
# Exit 1 listing every difference.
srcdir=${srcdir:-.}
def="$srcdir/src/base/params.def"
doc="$srcdir/doc/params.md"
for f in "$def" "$doc"; do
    if [ ! -r "$f" ]; then
        echo "FAIL: cannot read $f"
        exit 1
    fi
done
LC_ALL=C
export LC_ALL
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# HIAR_PARAM(NAME, TYPE, "DEFAULT", ...) -> HIAR_NAME|type|default, with
# hiar_param_type_name()'s words for the types.
sed -n 's/^[[:space:]]*HIAR_PARAM([[:space:]]*\([A-Z0-9_]*\)[[:space:]]*,[[:space:]]*\([A-Z]*\)[[:space:]]*,[[:space:]]*"\([^"]*\)".*/HIAR_\1|\2|\3/p' "$def" |
    sed 's/|STR|/|string|/; s/|ENUM|/|enum|/; s/|SIZE|/|size|/; s/|INT|/|int|/; s/|BOOL|/|bool|/' |
    sort >"$tmp/def"

# Table rows whose first cell is a parameter name -> HIAR_NAME|type|default.
awk -F'|' '
    function clean(s) { gsub(/`/, "", s); gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
    /^[ \t]*\|/ {
        name = clean($2)
        if (name !~ /^HIAR_[A-Z0-9_]+$/)
            next
        type = tolower(clean($3))
        value = clean($4)
        if (value == "(empty)" || value == "-" || value == "\"\"" || value == "(none)")
            value = ""
        print name "|" type "|" value
    }' "$doc" | sort >"$tmp/doc"

if [ ! -s "$tmp/def" ]; then
    echo "FAIL: found no HIAR_PARAM(...) in $def"
    exit 1
fi

cut -d'|' -f1 "$tmp/def" | sort >"$tmp/def.names"
cut -d'|' -f1 "$tmp/doc" | sort >"$tmp/doc.names"
status=0
for name in $(comm -23 "$tmp/def.names" "$tmp/doc.names" | uniq); do
    echo "FAIL: $name is in src/base/params.def but has no row in doc/params.md"
    status=1
done
for name in $(comm -13 "$tmp/def.names" "$tmp/doc.names" | uniq); do
    echo "FAIL: doc/params.md has a row for $name, which src/base/params.def does not define"
    status=1
done
for name in $(sort -u "$tmp/doc.names" | comm -12 "$tmp/def.names" -); do
    if [ "$(grep -c "^$name|" "$tmp/doc")" -gt 1 ]; then
        echo "FAIL: doc/params.md has more than one row for $name"
        status=1
        continue
    fi
    want=$(grep "^$name|" "$tmp/def")
    got=$(grep "^$name|" "$tmp/doc")
    if [ "$want" != "$got" ]; then
        echo "FAIL: $name: doc/params.md says type|default '${got#*|}', src/base/params.def '${want#*|}'"
        status=1
    fi
done
if [ $status -eq 0 ]; then
    echo "PASS: $(wc -l <"$tmp/def") parameters, the same in src/base/params.def and doc/params.md"
fi
exit $status
