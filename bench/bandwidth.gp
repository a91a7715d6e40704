# bench/bandwidth.gp - bandwidth against size, per path, from gpumem bench --csv:
#
#   tools/gpumem bench --csv > bench.csv
#   gnuplot -e "csv='bench.csv'; out='bandwidth.png'" bench/bandwidth.gp
#
# An output name ending in .svg gives an SVG image instead of a PNG; the
# picture in doc/ is made from a recorded H100 run (bench/h100-transfers.csv):
#
#   gnuplot -e "csv='bench/h100-transfers.csv'; out='doc/bandwidth-h100.svg'; \
#     title='H100 80GB HBM3, PCIe gen5 x16, 2026-11-24: contiguous transfers'" bench/bandwidth.gp
#
# One line per case (h2d/d2h, pinned/pageable): the library's path (solid)
# and the plain driver call (dashed), GB/s against bytes on a log scale.
if (!exists("csv")) csv = 'bench.csv'
if (!exists("out")) out = 'bandwidth.png'
if (!exists("title")) title = "gpumem bench: contiguous transfers"
if (strlen(out) > 4 && out[strlen(out) - 3:strlen(out)] eq ".svg") {
    set terminal svg size 1200,700 enhanced font "sans,11" background "white"
} else {
    set terminal pngcairo size 1200,700 enhanced font ",11"
}
set output out
set datafile separator ","
set datafile missing NaN
set key top left
set logscale x 2
set format x "%.0b %BB"
set xlabel "transfer size"
set ylabel "GB/s (10^9 bytes per second)"
set grid
set title title
name(i) = i == 1 ? "h2d pageable" : i == 2 ? "h2d pinned" : i == 3 ? "d2h pageable" : "d2h pinned"
mine(i) = strcol(1) eq "transfer" && strcol(2) eq name(i) && strcol(3) ne "driver"
base(i) = strcol(1) eq "transfer" && strcol(2) eq name(i) && strcol(3) eq "driver"
# NaN, not 1/0, for the rows of other cases: with "set datafile missing NaN"
# gnuplot skips them and joins the points around them; 1/0 would break every
# line, since the rows of one case are not adjacent in the file
plot for [i=1:4] csv every ::1 using (mine(i) ? $4 : NaN):6 with linespoints lw 2 lc i title "gpumem ".name(i), \
     for [i=1:4] csv every ::1 using (base(i) ? $4 : NaN):6 with linespoints lw 1 dt 2 lc i title "driver ".name(i)
