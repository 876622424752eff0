# Latency per check (p50) and the store's memory per feature as a day limit grows, each feature
# holding half its limit. gnuplot -e "dir='bench/results'" bench/plots/growth.gp
set terminal pngcairo size 1200,520 font ",11"
set output dir."/growth.png"
data = dir."/growth.dat"
set logscale xy
set grid
set xlabel "limit per day (each feature holds half of it)"
set key top left font ",9"
set multiplot layout 1,2
set title "p50 µs per check"
plot data using 1:2 with linespoints lw 2 title "hourglass, memcached", \
     '' using 1:4 with linespoints title "hourglass, memcached, no hot path", \
     '' using 1:6 with linespoints lw 2 title "hourglass, Redis", \
     '' using 1:8 with linespoints title "Python limits moving window, Redis: hit", \
     '' using 1:10 with linespoints title "... hit + remaining"
set title "the store's memory per feature, bytes"
plot data using 1:3 with linespoints lw 2 title "hourglass, memcached", \
     '' using 1:7 with linespoints lw 2 title "hourglass, Redis", \
     '' using 1:9 with linespoints title "Python limits moving window, Redis"
unset multiplot
