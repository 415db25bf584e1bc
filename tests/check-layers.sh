#!/bin/sh
# The source layers, checked from the #include lines and the MPI calls of the
# sources.  A <- B means B may use A:
#
#     base <- topo <- net <- transport <- core <- {mpi, bench}
#     cuda/ sits beside transport: it uses base (and hiar.h and cuda/) only;
#           transport, core, mpi and bench may use it; base, topo, net may not.
#     mpi/  (the LD_PRELOAD) uses hiar.h, base, cuda and of core only
#           core/allreduce.h (hiar_allreduce_of_kind: the buffers' kind it
#           has asked CUDA for; hiar_comm_spin_ns for its own waits; that
#           header includes only hiar.h).
#     src/hiar.h (the public API) may be used by anyone; it includes only
#           system headers.
# Why: each layer then builds and can be read and tested on the ones below it
# alone, and the MPI_ vs PMPI_ choice (under libhiar_mpi.so's preload an
# MPI_Allreduce of hiar's own would come back into hiar) is made in one place.
#
# A file's layer is its folder: src/base/ src/topo/ src/net/ src/transport/
# src/core/ cuda/ mpi/ bench/.  What is checked:
#  1. every `#include "X"` of the .c .h .cu .cuh .def files under src/ cuda/
#     mpi/ bench/ resolves to a file (X relative to the including file's
#     folder, then to src/, then to the root, as -I$(top_srcdir)/src
#     -I$(top_srcdir) do; "config.h" and <...> are not checked), and does not
#     climb a layer or use one the table above forbids;
#  2. the include graph between modules (a file's folder and stem:
#     src/core/comm.c and src/core/comm.h are src/core/comm) has no cycle;
#     each cycle a depth-first search closes is printed with the includes
#     that make it (fixing those may bring out others on the next run);
#  3. hiar's own MPI collectives (MPI_ or PMPI_ Allreduce, Iallreduce,
#     Allgather, Iallgather, Barrier, Bcast, Reduce) are called only in
#     src/net/, the one place that chooses MPI_ or PMPI_.  Files under src/
#     outside src/net/ are checked, comments and strings left out; mpi/ (the
#     preload calls what it likes), cuda/ and bench/ are not.
# A tree without src/base/ is the flat tree from before the layer folders;
# its files get their layers from their names (see layer() below).
#
# Usage: tests/check-layers.sh [ROOT]   (ROOT defaults to $srcdir, then .)
# Prints PASS:/FAIL: lines and "N passed, N failed"; exit 1 on any failure.
srcdir=${srcdir:-.}
if [ $# -gt 0 ]; then
    srcdir=$1
fi
LC_ALL=C
export LC_ALL
if ! cd "$srcdir" 2>/dev/null || [ ! -f src/hiar.h ]; then
    echo "FAIL: $srcdir is not a hiar source tree (no src/hiar.h)"
    echo "0 passed, 1 failed"
    exit 1
fi
if [ -d src/base ]; then flat=0; else flat=1; fi

for d in src cuda mpi bench; do
    if [ -d "$d" ]; then find "$d" -type f; fi
done | sort | awk -v flat="$flat" '
# The layer of a file (path relative to the root), "" when it is in none.
function layer(p,   n, a, stem) {
    if (p == "src/hiar.h")
        return "api"
    n = split(p, a, "/")
    if (a[1] == "src") {
        if (n >= 3)
            return (a[2] ~ /^(base|topo|net|transport|core)$/) ? a[2] : ""
        if (!flat)
            return ""
        # The flat tree: src/*.c|h by name.
        stem = a[2]
        sub(/\.[^.]*$/, "", stem)
        if (stem ~ /^(error|log|param|params|dtype|reduce|wait|shard)$/)
            return "base"
        if (stem ~ /^(topo|pcitopo|nvml)/)
            return "topo"
        if (stem == "shm")
            return "transport"
        return "core"
    }
    if (a[1] == "cuda")
        return "cuda"
    if (a[1] == "mpi")
        return (flat && a[2] ~ /^inter\./) ? "net" : "mpi"
    if (a[1] == "bench")
        return "bench"
    return ""
}

function dirname(p) {
    return (p ~ /\//) ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "."
}

# a/./b/../c -> a/c; a path that leaves the root keeps its leading "..".
function norm(p,   n, a, i, k, s) {
    n = split(p, a, "/")
    k = 0
    for (i = 1; i <= n; i++) {
        if (a[i] == "" || a[i] == ".")
            continue
        if (a[i] == ".." && k > 0 && part[k] != "..")
            k--
        else
            part[++k] = a[i]
    }
    s = ""
    for (i = 1; i <= k; i++)
        s = s (i > 1 ? "/" : "") part[i]
    return s
}

function exists(p,   q) {
    if (p == "" || p ~ /^\.\.(\/|$)/)
        return 0
    if (p in known)
        return known[p]
    if (p ~ /^(src|cuda|mpi|bench)\//) {
        known[p] = 0        # every file there was listed
        return 0
    }
    known[p] = p !~ /\047/ && system("test -f \047" p "\047") == 0
    return known[p]
}

function resolve(from, x,   c) {
    c = norm(dirname(from) "/" x)
    if (exists(c))
        return c
    c = norm("src/" x)
    if (exists(c))
        return c
    c = norm(x)
    if (exists(c))
        return c
    return ""
}

function module(p) {
    sub(/\.[^.\/]*$/, "", p)
    return p
}

function uses(from, to) {
    return index(" " allowed[from] " ", " " to " ") > 0
}

# The line with its comments and string/char literals blanked; comment state
# in the global incomment, reset per file.
function code(s,   out, i, n, c, j, q) {
    if (!incomment && s !~ /[\/"\047]/)
        return s
    out = ""
    n = length(s)
    i = 1
    while (i <= n) {
        if (incomment) {
            j = index(substr(s, i), "*/")
            if (!j)
                return out
            i += j + 1
            incomment = 0
            out = out " "
            continue
        }
        c = substr(s, i, 2)
        if (c == "/*") {
            incomment = 1
            i += 2
            continue
        }
        if (c == "//")
            return out
        c = substr(s, i, 1)
        if (c == "\"" || c == "\047") {
            q = c
            for (i++; i <= n; i++) {
                c = substr(s, i, 1)
                if (c == "\\")
                    i++
                else if (c == q)
                    break
            }
            i++
            out = out q q
            continue
        }
        out = out c
        i++
    }
    return out
}

# Depth-first search of the module graph; a back edge u -> v closes the
# cycle v -> ... -> u -> v.
# One check: its n failures, or one PASS line saying what holds.
function report(n, list, ok,   i) {
    for (i = 1; i <= n; i++)
        print "FAIL: " list[i]
    fail += n
    if (!n) {
        print "PASS: " ok
        pass++
    }
}
function dfs(u,   a, n, i, v, k, j, msg) {
    state[u] = 1
    stack[++sp] = u
    n = split(adj[u], a, " ")
    for (i = 1; i <= n; i++) {
        v = a[i]
        if (state[v] == 1) {
            for (k = sp; stack[k] != v; k--)
                ;
            msg = "cycle: "
            for (j = k; j <= sp; j++)
                msg = msg stack[j] " -> "
            msg = msg v
            for (j = k; j < sp; j++)
                msg = msg "\n  " why[stack[j], stack[j + 1]]
            msg = msg "\n  " why[u, v]
            cycles[++ncycles] = msg
        } else if (!state[v])
            dfs(v)
    }
    sp--
    state[u] = 2
}

BEGIN {
    allowed["api"] = "api"
    allowed["base"] = "api base"
    allowed["topo"] = "api base topo"
    allowed["net"] = "api base topo net"
    allowed["cuda"] = "api base cuda"
    allowed["transport"] = "api base topo net cuda transport"
    allowed["core"] = "api base topo net cuda transport core"
    allowed["mpi"] = "api base cuda mpi"
    allowed["bench"] = "api base topo net cuda transport core bench"
    rank["api"] = -1; rank["base"] = 0; rank["topo"] = 1; rank["net"] = 2
    rank["cuda"] = 2.5; rank["transport"] = 3; rank["core"] = 4
    rank["mpi"] = 5; rank["bench"] = 5
    collective = "(^|[^A-Za-z0-9_])P?MPI_(Allreduce|Iallreduce|Allgather|Iallgather|Barrier|Bcast|Reduce)[ \t\r\f\v]*\\("
}

{
    known[$0] = 1
    if ($0 ~ /\.(c|h|cu|cuh|def)$/)
        files[++nfiles] = $0
}

END {
    for (f = 1; f <= nfiles; f++) {
        file = files[f]
        from = layer(file)
        m = module(file)
        if (!(m in seen)) {
            seen[m] = 1
            modules[++nmodules] = m
        }
        if (from == "")
            bad[++nbad] = file ": is in no layer (src/hiar.h, src/{base,topo,net,transport,core}/, cuda/, mpi/, bench/)"
        mpicheck = file ~ /^src\// && file !~ /^src\/net\//
        if (mpicheck)
            nmpifiles++
        incomment = 0
        line = 0
        while ((r = (getline s < file)) > 0) {
            line++
            if (mpicheck && match(c = code(s), collective)) {
                call = substr(c, RSTART, RLENGTH)
                sub(/^[^A-Za-z0-9_]/, "", call)
                sub(/[ \t\r\f\v]*\($/, "", call)
                mpi[++nmpi] = file ":" line ": calls " call ", an MPI collective, outside src/net/"
            }
            if (s !~ /^[ \t]*#[ \t]*include[ \t]*"/)
                continue
            x = s
            sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", x)
            if (!index(x, "\"")) {
                unresolved[++nunres] = file ":" line ": cannot parse " s
                continue
            }
            x = substr(x, 1, index(x, "\"") - 1)
            if (x == "config.h")
                continue
            nincludes++
            to = resolve(file, x)
            if (to == "") {
                unresolved[++nunres] = file ":" line ": cannot find " x
                continue
            }
            tl = layer(to)
            where = file ":" line ": includes " x
            if (from != "") {
                if (tl == "")
                    bad[++nbad] = where ", which is " to ", in no layer"
                else if (!uses(from, tl) && !(from == "mpi" && to == "src/core/allreduce.h")) {
                    if (rank[tl] > rank[from])
                        bad[++nbad] = where ", which is in layer " tl " above this file\047s layer " from
                    else
                        bad[++nbad] = where ", which is in layer " tl ", which layer " from " may not use (it uses only: " allowed[from] ")"
                }
            }
            mt = module(to)
            if (mt != m && !((m, mt) in why)) {
                why[m, mt] = where
                adj[m] = adj[m] " " mt
            }
        }
        if (r < 0)
            unresolved[++nunres] = file ": cannot read it"
        close(file)
    }
    for (i = 1; i <= nmodules; i++)
        if (!state[modules[i]])
            dfs(modules[i])

    pass = fail = 0
    report(nunres, unresolved, "the " nincludes + 0 " quoted includes of " nfiles + 0 " files resolve")
    report(nbad, bad, "every file is in a layer and includes only what its layer may use" (flat ? " (flat tree)" : ""))
    report(ncycles, cycles, "no include cycle between the " nmodules + 0 " modules")
    report(nmpi, mpi, "no MPI collective called in the " nmpifiles + 0 " files under src/ outside src/net/")
    print pass " passed, " fail " failed"
    exit (fail > 0)
}'
