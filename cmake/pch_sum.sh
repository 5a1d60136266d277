#!/usr/bin/env bash
# Compiler launcher of the shared precompiled headers under clang (cmake/TdrlOptions.cmake):
#   pch_sum.sh [launcher...] compiler flags...
# runs the compile, then writes <pch>.sum beside the precompiled header: a hash of the compiler's
# version, of its flags and of the content of every header the PCH was built from, with the
# checkout's path (CCACHE_BASEDIR) masked. ccache with pch_external_checksum (scripts/common.sh)
# hashes that file instead of the PCH. A clang PCH records the absolute paths of its inputs, so
# the same PCH built in two clones differs byte for byte and ccache would never reuse an object
# built with it in another clone; the objects themselves hold none of those paths (no debug
# information), so what the PCH was built from is what they depend on.
# When anything here fails, no .sum is left and ccache hashes the PCH itself, as without it.
out= dep= prev= compiler=
for a in "$@"; do
  case $prev in -o) out=$a ;; -MF) dep=$a ;; esac
  # The compiler is the last program before the first flag.
  if [[ -z $compiler && $a == -* ]]; then compiler=$prev; fi
  prev=$a
done
case $out in *.pch) rm -f "$out.sum" ;; esac
"$@" || exit
case $out in *.pch) ;; *) exit 0 ;; esac
[[ -n $dep && -n $compiler ]] || exit 0

root=${CCACHE_BASEDIR:-}
mask() { if [[ -n $root ]]; then sed "s|$root|@CHECKOUT@|g"; else cat; fi; }
(
  set -o pipefail
  {
    "$compiler" --version
    printf '%s\n' "$@" | mask
    # The dependency file lists the headers after "target:", several a line, lines continued by
    # a backslash.
    sed -e 's/\\$//' -e '1s/^[^:]*://' "$dep" | tr -s ' \t' '\n\n' | sed '/^$/d' | sort -u |
      xargs -d '\n' sha256sum | mask
  } | sha256sum | cut -c1-64 > "$out.sum.tmp" && mv "$out.sum.tmp" "$out.sum"
) 2> /dev/null || rm -f "$out.sum.tmp"
exit 0
