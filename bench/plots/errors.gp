# Over-admissions and needless denials per limiter (hourglass first), all traces, policy
# 2/s,5/m,10/h,100/d. On the log scale a zero has no bar: its count is printed at the baseline.
# gnuplot -e "dir='bench/results'" bench/plots/errors.gp
set terminal pngcairo size 1200,720 font ",11"
set output dir."/errors.png"
set title "Decision errors per limiter (all synthetic traces + the real Apache log; admitted mode)"
set style fill solid 0.85 border -1
set boxwidth 0.8
set ylabel "requests (log scale)"
set logscale y
set yrange [0.7:5e6]
set xrange [-1:*]
set xtics rotate by 20 right scale 0 font ",9"
set bmargin 14
set lmargin 14
set key top right
set grid ytics
data = dir."/errors_by_limiter.dat"
bar(v) = v > 0 ? v : NaN
plot data using ($0*3):(bar($2)) with boxes lc rgb "#c0392b" title "over-admissions", \
     '' using ($0*3+0.5):(NaN):xtic(1) notitle, \
     '' using ($0*3+1):(bar($3)) with boxes lc rgb "#2980b9" title "needless denials", \
     '' using ($0*3):($2 > 0 ? $2*1.3 : 0.85):(sprintf("%d", $2)) with labels font ",8" notitle, \
     '' using ($0*3+1):($3 > 0 ? $3*1.3 : 0.85):(sprintf("%d", $3)) with labels font ",8" notitle
