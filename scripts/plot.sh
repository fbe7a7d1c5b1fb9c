#!/usr/bin/env bash
# Draws ccf's benchmark plots (PNG, gnuplot) from the CSV files of one run.
#
#   scripts/plot.sh DIR [OUTDIR]
#
# DIR holds throughput.csv (ccf-bench) and/or eval.csv (ccf-bench --experiment ...); the PNGs go to
# OUTDIR (default DIR):
#   throughput_<op>_<dist>.png  Mops/s against threads, one line per filter (and per batch mode),
#                               with the two-line memory ceiling of the cuckoo table
#   fpr.png                     measured FPR against fingerprint bits for b = 2, 4, 8, with the
#                               bound 2*b*alpha/2^f
#   bits_per_item.png           bits per item against fingerprint bits, with f/alpha
#   space.png                   bits per item against measured FPR: cuckoo filters, Bloom filters,
#                               and the two formulas 1.44*log2(1/e) and (log2(1/e) + log2(2b))/alpha
#   load.png                    load reached before the first failed insert against bucket size
#   fplen.png                   probability that filling to 90 % (80 % for b = 2) fails against
#                               log2(table slots), one line per (f, b)
#   fplen_load.png              mean load reached at the first failed insert, same axes
# PLOT_BITS (default 16) selects the fingerprint width of the throughput plots. gnuplot is taken
# from PATH, or from .carry/ (scripts/carry_debs.sh) with its libraries.
set -euo pipefail

dir="${1:?usage: plot.sh DIR [OUTDIR]}"
outdir="${2:-$dir}"
mkdir -p "$outdir"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bits="${PLOT_BITS:-16}"

gnuplot_cmd=()
if command -v gnuplot > /dev/null 2>&1; then
  gnuplot_cmd=(gnuplot)
elif [[ -x "$root/.carry/usr/bin/gnuplot-nox" ]]; then
  libs="$root/.carry/usr/lib/x86_64-linux-gnu:$root/.carry/lib/x86_64-linux-gnu"
  gnuplot_cmd=(env "LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
               "GNUPLOT_DRIVER_DIR=$root/.carry/usr/libexec/gnuplot/5.4"
               "$root/.carry/usr/bin/gnuplot-nox")
else
  echo "plot.sh: gnuplot not found (install gnuplot-nox, or run plot.sh where it is)" >&2
  exit 1
fi
if "${gnuplot_cmd[@]}" -e "set terminal" 2>&1 | grep -q pngcairo; then
  term="set terminal pngcairo size 960,600 font 'sans,10'"
else
  term="set terminal png size 960,600"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# CSV reader for awk (mawk-compatible): splits one line into f[1..n], honouring "quoted, fields".
csv_awk='
function split_csv(line, f,    n, i, c, field, inq) {
  n = 0; field = ""; inq = 0
  for (i = 1; i <= length(line); i++) {
    c = substr(line, i, 1)
    if (inq) {
      if (c == "\"") {
        if (substr(line, i + 1, 1) == "\"") { field = field c; i++ } else inq = 0
      } else field = field c
    } else if (c == "\"") inq = 1
    else if (c == ",") { f[++n] = field; field = "" }
    else field = field c
  }
  f[++n] = field
  return n
}
NR == 1 { n = split_csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
'

plotted=0

# Sorts every data file numerically on its first column (awk writes them in hash order).
sort_all() {
  local dat
  for dat in "$work"/*.dat; do
    [[ -f "$dat" ]] && sort -g -o "$dat" "$dat"
  done
  return 0
}

# ---- throughput against threads ----
if [[ -s "$dir/throughput.csv" ]]; then
  awk -v bits="$bits" -v work="$work" "$csv_awk"'
  {
    split_csv($0, f)
    filter = f[col["filter"]]; b = f[col["bits"]]; op = f[col["op"]]; dist = f[col["dist"]]
    if (filter ~ /^memory_/) next
    # the lock-free filter has no 16-bit layout: its 12-bit rows stand in for it
    if (b != bits && b != 0 && !(filter == "lockfree" && bits == 16 && b == 12)) next
    t = f[col["threads"]] + 0; m = f[col["mops"]] + 0
    d = (dist == "-" ? "all" : dist)
    name = filter (f[col["batch"]] == 1 ? "_batch" : "")
    key = op "_" d SUBSEP name SUBSEP t
    sum[key] += m; cnt[key]++
    if ((filter == "striped" || filter == "cuckoo") && f[col["ceiling_mops"]] != "") {
      ck = op "_" d SUBSEP t
      csum[ck] += f[col["ceiling_mops"]]; ccnt[ck]++
    }
  }
  END {
    for (key in sum) {
      split(key, k, SUBSEP)
      file = work "/tp_" k[1] "__" k[2] ".dat"
      printf "%d %.6f\n", k[3], sum[key] / cnt[key] > file
    }
    for (ck in csum) {
      split(ck, k, SUBSEP)
      file = work "/tp_" k[1] "__memory_ceiling.dat"
      printf "%d %.6f\n", k[2], csum[ck] / ccnt[ck] > file
    }
  }' "$dir/throughput.csv"
  sort_all
  for group in $(ls "$work" | sed -n 's/^tp_\(.*\)__.*\.dat$/\1/p' | sort -u); do
    plot=""
    for dat in "$work"/tp_"$group"__*.dat; do
      series="${dat##*__}"
      series="${series%.dat}"
      [[ "$series" == memory_ceiling ]] && continue
      plot+="'$dat' using 1:2 with linespoints lw 2 title '${series//_/ }', "
    done
    [[ -z "$plot" ]] && continue
    if [[ -f "$work/tp_${group}__memory_ceiling.dat" ]]; then
      plot+="'$work/tp_${group}__memory_ceiling.dat' using 1:2 with lines dt 2 lw 2 lc rgb 'black' title 'memory ceiling (2 lines/op)', "
    fi
    "${gnuplot_cmd[@]}" <<EOF
$term
set output '$outdir/throughput_${group}.png'
set title "ccf-bench: ${group//_/ } (${bits}-bit tags where applicable)"
set xlabel 'threads'
set ylabel 'million operations per second'
set logscale x 2
set logscale y 10
set grid
set key outside right top
plot ${plot%, }
EOF
    plotted=$((plotted + 1))
  done
fi

# ---- evaluation experiments ----
if [[ -s "$dir/eval.csv" ]]; then
  awk -v work="$work" "$csv_awk"'
  {
    split_csv($0, f)
    e = f[col["experiment"]]; filter = f[col["filter"]]
    b = f[col["slots_per_bucket"]]; bits = f[col["bits"]]
    if (e == "fpr" && filter == "cuckoo") {
      k = b SUBSEP bits
      nf[k]++; fpr[k] += f[col["fpr"]]; bound[k] += f[col["fpr_bound"]]
      bpi[k] += f[col["bits_per_item"]]; load[k] += f[col["load"]]
    } else if (e == "fpr") {
      printf "%s %s\n", f[col["fpr"]], f[col["bits_per_item"]] > (work "/space_" filter ".dat")
    } else if (e == "load") {
      k = b SUBSEP bits
      ln[k]++; ls[k] += f[col["load"]]
      v = f[col["load"]] + 0
      if (!(k in lmin) || v < lmin[k]) lmin[k] = v
      if (!(k in lmax) || v > lmax[k]) lmax[k] = v
    } else if (e == "fplen") {
      printf "%s %s %s %s\n", f[col["log2_n"]], f[col["p_fail"]], f[col["load"]], f[col["min_load"]] \
        > (work "/fplen_b" b "_f" bits ".dat")
    }
  }
  END {
    for (k in nf) {
      split(k, p, SUBSEP)
      printf "%s %.6e %.6e %.4f %.5f\n", p[2], fpr[k] / nf[k], bound[k] / nf[k], bpi[k] / nf[k], \
        load[k] / nf[k] > (work "/fpr_b" p[1] ".dat")
      if (fpr[k] > 0)
        printf "%.6e %.4f\n", fpr[k] / nf[k], bpi[k] / nf[k] > (work "/space_cuckoo_b" p[1] ".dat")
    }
    for (k in ln) {
      split(k, p, SUBSEP)
      printf "%s %.5f %.5f %.5f\n", p[1], ls[k] / ln[k], lmin[k], lmax[k] > (work "/load_f" p[2] ".dat")
    }
  }' "$dir/eval.csv"
  sort_all

  if ls "$work"/fpr_b*.dat > /dev/null 2>&1; then
    plot=""
    plot2=""
    colour=0
    for dat in $(ls "$work"/fpr_b*.dat | sort -V); do
      b="${dat##*_b}"
      b="${b%.dat}"
      colour=$((colour + 1))
      plot+="'$dat' using 1:(\$2 > 0 ? \$2 : 1/0) with points lc $colour pt 7 ps 1.5 title 'measured, b = $b', "
      plot+="'$dat' using 1:3 with lines lc $colour dt 2 title '2b{/Symbol a}/2^f, b = $b', "
      plot2+="'$dat' using 1:4 with points lc $colour pt 7 ps 1.5 title 'measured, b = $b', "
      plot2+="'$dat' using 1:(\$1 / \$5) with lines lc $colour dt 2 title 'f/{/Symbol a}, b = $b', "
    done
    "${gnuplot_cmd[@]}" <<EOF
$term
set output '$outdir/fpr.png'
set title 'False-positive rate of a full cuckoo filter against fingerprint length'
set xlabel 'fingerprint bits f'
set ylabel 'false-positive rate'
set logscale y 10
set format y '10^{%L}'
set grid
set key outside right top
plot ${plot%, }
set output '$outdir/bits_per_item.png'
set title 'Space per item of a full cuckoo filter against fingerprint length'
unset logscale y
set format y '%g'
set ylabel 'bits per item'
plot ${plot2%, }
EOF
    plotted=$((plotted + 2))
  fi

  if ls "$work"/space_*.dat > /dev/null 2>&1; then
    plot=""
    for dat in "$work"/space_*.dat; do
      name="${dat##*/space_}"
      name="${name%.dat}"
      plot+="'$dat' using 1:2 with linespoints pt 7 title '${name//_/ } (measured)', "
    done
    "${gnuplot_cmd[@]}" <<EOF
$term
set output '$outdir/space.png'
set title 'Bits per item against false-positive rate'
set xlabel 'false-positive rate {/Symbol e}'
set ylabel 'bits per item'
set logscale x 10
set format x '10^{%L}'
set xrange [1e-7:1]
set grid
set key outside right top
log2(x) = log(x) / log(2)
plot ${plot} 1.44 * log2(1 / x) with lines dt 2 lw 2 title 'Bloom: 1.44 log_2(1/{/Symbol e})', \
  (log2(1 / x) + 3) / 0.95 with lines dt 3 lw 2 title 'cuckoo b = 4: (log_2(1/{/Symbol e}) + 3)/0.95', \
  (log2(1 / x) + 2) / 0.84 with lines dt 4 lw 2 title 'cuckoo b = 2: (log_2(1/{/Symbol e}) + 2)/0.84'
EOF
    plotted=$((plotted + 1))
  fi

  if ls "$work"/load_f*.dat > /dev/null 2>&1; then
    plot=""
    for dat in $(ls "$work"/load_f*.dat | sort -V); do
      f="${dat##*_f}"
      f="${f%.dat}"
      plot+="'$dat' using 1:2:3:4 with yerrorlines pt 7 title 'f = $f', "
    done
    printf '2 0.84\n4 0.95\n8 0.98\n' > "$work/thesis_load.txt"
    "${gnuplot_cmd[@]}" <<EOF
$term
set output '$outdir/load.png'
set title 'Load reached before the first failed insert (mean, min, max over seeds)'
set xlabel 'slots per bucket b'
set ylabel 'load factor'
set logscale x 2
set xrange [1.6:10]
set xtics (2, 4, 8)
set grid
set key outside right top
plot ${plot} '$work/thesis_load.txt' using 1:2 with points pt 4 ps 2 lc rgb 'black' title 'thesis: 84 / 95 / 98 %'
EOF
    plotted=$((plotted + 1))
  fi

  if ls "$work"/fplen_*.dat > /dev/null 2>&1; then
    plot=""
    plot2=""
    for dat in $(ls "$work"/fplen_*.dat | sort -V); do
      name="${dat##*/fplen_}"
      name="${name%.dat}"
      b="${name%%_*}"
      b="${b#b}"
      f="${name##*_f}"
      case "$f" in 4) colour=1 ;; 8) colour=2 ;; 12) colour=3 ;; *) colour=4 ;; esac
      case "$b" in 2) dash=2 ;; 4) dash=1 ;; *) dash=4 ;; esac
      style="lc $colour dt $dash"
      plot+="'$dat' using 1:2 with linespoints $style lw 2 title 'f = $f, b = $b', "
      plot2+="'$dat' using 1:3 with linespoints $style lw 2 title 'f = $f, b = $b', "
    done
    "${gnuplot_cmd[@]}" <<EOF
$term
set output '$outdir/fplen.png'
set title 'Probability that a fill fails before 90 % of the slots (80 % for b = 2)'
set xlabel 'log_2(table slots)'
set ylabel 'probability'
set yrange [-0.05:1.05]
set grid
set key outside right top
plot ${plot%, }
set output '$outdir/fplen_load.png'
set title 'Mean load reached at the first failed insert'
set ylabel 'load factor'
set yrange [*:1]
plot ${plot2%, }
EOF
    plotted=$((plotted + 2))
  fi
fi

echo "plot.sh: $plotted plots in $outdir"
