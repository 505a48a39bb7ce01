# cellset DIR NAME EXPERIMENT FLAGS...: runs `torsim run EXPERIMENT FLAGS...` one cell a process,
# P at a time (default two), GOMAXPROCS=1, each cell's CPU in DIR/NAME/time.log, then merge-run writes
# DIR/NAME.{json,md}. A set whose record is there is not run again. Sourced by the sets' run.sh,
# from the repository's root; TORSIM is torsim's path.
cellset() {
  dir=$1 name=$2 exp=$3; shift 3
  [ -f $dir/$name.json ] && return
  mkdir -p $dir/$name
  T=${TORSIM:-torsim}
  N=$($T run $exp "$@" --count-cells | awk '/ cells$/{print $2}')
  # The flags quoted for the cells' sh -c, so that one with spaces or quotes (--timely's
  # JSON) stays one argument.
  q=
  for a in "$@"; do q="$q '$(printf %s "$a" | sed "s/'/'\\\\''/g")'"; done
  seq 0 $((N-1)) | xargs -P "${P:-2}" -I @ sh -c "GOMAXPROCS=1 /usr/bin/time -a -o $dir/$name/time.log -f 'cell @: %U user %S sys %e wall %M KB' \
    $T run $exp $q --shard @/$N --cells $dir/$name/cells >/dev/null 2>&1"
  $T merge-run $exp "$@" --cells $dir/$name/cells --record $dir/$name.json --md $dir/$name.md >/dev/null
}
