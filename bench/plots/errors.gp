# Over-admissions and needless denials per limiter, all traces, policy 2/s,5/m,10/h,100/d.
# gnuplot -e "dir='bench/results'" bench/plots/errors.gp
set terminal pngcairo size 1000,520 font ",11"
set output dir."/errors.png"
set title "Decision errors per limiter (all synthetic traces + the real Apache log; admitted mode)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set ylabel "requests (log scale; 0 shown at the baseline)"
set logscale y
set yrange [0.8:*]
set xtics rotate by -20 scale 0
set key top left
set grid ytics
plot dir."/errors_by_limiter.dat" using ($2+1):xtic(1) title "over-admissions (+1)", \
     '' using ($3+1) title "needless denials (+1)"
