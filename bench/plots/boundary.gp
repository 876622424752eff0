# The boundary attack: each limiter's estimate of the 1 min window against the exact count of its
# admitted hits, for the first attacker around the first hour boundary (limit 5/min).
# gnuplot -e "dir='bench/results'" bench/plots/boundary.gp
set terminal pngcairo size 1000,520 font ",11"
set output dir."/boundary_attack.png"
set title "Boundary attack on 2/s, 5/m, 10/h, 100/d: 2 requests/s from 15 s before to 15 s after the hour"
set xlabel "seconds from the hour boundary"
set ylabel "hits in the sliding minute"
set key top left
set grid
set xrange [-20:20]
set yrange [0:12]
plot 5 with lines dt 2 lw 2 lc rgb "black" title "limit 5/m", \
     dir."/boundary_attack.dat" index 1 using 1:3 with steps lw 3 lc rgb "#d62728" title "fixed window: exact count of its admitted hits", \
     '' index 1 using 1:2 with points pt 7 ps 0.8 lc rgb "#d62728" title "fixed window: its estimate", \
     '' index 2 using 1:3 with steps lw 2 lc rgb "#ff7f0e" title "sliding counter: exact count", \
     '' index 2 using 1:2 with points pt 5 ps 0.8 lc rgb "#ff7f0e" title "sliding counter: its estimate", \
     '' index 0 using 1:3 with steps lw 2 lc rgb "#2ca02c" title "hourglass: exact count (= its estimate)"
