# bench/bandwidth.gp - bandwidth against size, per path, from gpumem bench --csv:
#
#   tools/gpumem bench --csv > bench.csv
#   gnuplot -e "csv='bench.csv'; out='bandwidth.png'" bench/bandwidth.gp
#
# One line per case (h2d/d2h, pinned/pageable): the library's path (solid)
# and the plain driver call (dashed), GB/s against bytes on a log scale.
if (!exists("csv")) csv = 'bench.csv'
if (!exists("out")) out = 'bandwidth.png'
set terminal pngcairo size 1200,700 enhanced font ",11"
set output out
set datafile separator ","
set key top left
set logscale x 2
set format x "%.0s%cB"
set xlabel "transfer size"
set ylabel "GB/s (10^9 bytes per second)"
set grid
set title "gpumem bench: contiguous transfers"
name(i) = i == 1 ? "h2d pageable" : i == 2 ? "h2d pinned" : i == 3 ? "d2h pageable" : "d2h pinned"
mine(i) = strcol(1) eq "transfer" && strcol(2) eq name(i) && strcol(3) ne "driver"
base(i) = strcol(1) eq "transfer" && strcol(2) eq name(i) && strcol(3) eq "driver"
plot for [i=1:4] csv every ::1 using (mine(i) ? $4 : 1/0):6 with linespoints lw 2 lc i title "gpumem ".name(i), \
     for [i=1:4] csv every ::1 using (base(i) ? $4 : 1/0):6 with linespoints lw 1 dt 2 lc i title "driver ".name(i)
