#!/bin/sh
# src/base/params.def and the table of doc/params.md list the same parameters with
# the same type, scope and default.  A row looks like
#     | `HIAR_DEBUG` | enum | process | `WARN` | Log level ... |
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

# HIAR_PARAM(NAME, TYPE, "DEFAULT", "CHOICES", SCOPE, ...) -> HIAR_NAME|type|scope|default,
# with hiar_param_type_name()'s and hiar_param_scope_name()'s words.
sed -n 's/^[[:space:]]*HIAR_PARAM([[:space:]]*\([A-Z0-9_]*\)[[:space:]]*,[[:space:]]*\([A-Z]*\)[[:space:]]*,[[:space:]]*"\([^"]*\)"[[:space:]]*,[[:space:]]*"[^"]*"[[:space:]]*,[[:space:]]*\([A-Z]*\)[[:space:]]*,.*/HIAR_\1|\2|\4|\3/p' "$def" |
    awk -F'|' '
        BEGIN { t["STR"] = "string"; t["ENUM"] = "enum"; t["SIZE"] = "size"; t["INT"] = "int"; t["BOOL"] = "bool" }
        {
            value = $0
            sub(/^[^|]*[|][^|]*[|][^|]*[|]/, "", value)
            print $1 "|" ($2 in t ? t[$2] : $2) "|" tolower($3) "|" value
        }' |
    sort >"$tmp/def"
# Table rows whose first cell is a parameter name -> HIAR_NAME|type|scope|default.
awk -F'|' '
    function clean(s) { gsub(/`/, "", s); gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
    /^[ \t]*\|/ {
        name = clean($2)
        if (name !~ /^HIAR_[A-Z0-9_]+$/)
            next
        type = tolower(clean($3))
        scope = tolower(clean($4))
        value = clean($5)
        if (value == "(empty)" || value == "-" || value == "\"\"" || value == "(none)")
            value = ""
        print name "|" type "|" scope "|" value
    }' "$doc" | sort >"$tmp/doc"

if [ ! -s "$tmp/def" ]; then
    echo "FAIL: found no HIAR_PARAM(...) in $def"
    exit 1
fi

cut -d'|' -f1 "$tmp/def" | sort >"$tmp/def.names"
cut -d'|' -f1 "$tmp/doc" | sort >"$tmp/doc.names"
status=0
# A HIAR_PARAM line the sed above could not read (wrong arity, unquoted default).
sed -n 's/^[[:space:]]*HIAR_PARAM([[:space:]]*\([A-Z0-9_]*\).*/HIAR_\1/p' "$def" | sort >"$tmp/def.all"
for name in $(comm -13 "$tmp/def.names" "$tmp/def.all" | uniq); do
    echo "FAIL: cannot read the line of $name in src/base/params.def: expected HIAR_PARAM(NAME, TYPE, \"DEFAULT\", \"CHOICES\", SCOPE, DOC)"
    status=1
done
[ $status -eq 0 ] || exit 1
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
        echo "FAIL: $name: doc/params.md says type|scope|default '${got#*|}', src/base/params.def '${want#*|}'"
        status=1
    fi
done
if [ $status -eq 0 ]; then
    echo "PASS: $(wc -l <"$tmp/def") parameters, the same in src/base/params.def and doc/params.md"
fi
exit $status
