# Throughput (decisions per second) and p99 latency by clients, one column per (synchronous_commit, key
# distribution).
#   gnuplot -e "datafile='plot.tsv'; outfile='plot.png'; subtitle='...'" bench/plot.gp
# plot.tsv (written by pg_ratelimit_bench): panel, system, clients, tps, p50_us, p99_us, p999_us,
# decisions_per_s (tps, times the keys per call of a rate_limit_request_many system); the rows of one
# (panel, system) series are contiguous, so each series is drawn as one line. The batches
# (many_*) are measured at one client only: a point each.
if (!exists("datafile")) datafile = 'plot.tsv'
if (!exists("outfile")) outfile = 'plot.png'
if (!exists("subtitle")) subtitle = ''

set terminal pngcairo size 1800,900 font 'DejaVu Sans,10' noenhanced
set output outfile
set datafile separator "\t"
set datafile commentschars "#"

# run.sh passes the panels and systems present in the data; these are the full run's.
if (!exists("systems")) systems = "select1 update upsert seed ext ext_sql ext_record ext_denied redis"
if (!exists("panels")) panels = "off-uniform off-hot on-uniform on-hot"
width = 1.0 / words(panels)
panel_title(p) = p eq "off-uniform" ? "synchronous_commit=off, uniform keys" : \
                 p eq "off-hot" ? "synchronous_commit=off, one hot key" : \
                 p eq "on-uniform" ? "synchronous_commit=on, uniform keys" : "synchronous_commit=on, one hot key"
label(s) = s eq "select1" ? "SELECT 1" : s eq "update" ? "UPDATE one row" : \
           s eq "upsert" ? "SQL upsert bucket" : s eq "seed" ? "seed PL/pgSQL" : \
           s eq "ext" ? "rate_limit_request" : s eq "ext_sql" ? "rate_limit_request (SQL path)" : \
           s eq "ext_record" ? "rate_limit_request (scalar)" : \
           s eq "ext_denied" ? "rate_limit_request (denied)" : \
           s eq "redis" ? "Redis GCRA (EVALSHA)" : \
           s eq "ext_unlogged" ? "rate_limit_request (unlogged)" : \
           s eq "ext_memory" ? "rate_limit_request (memory)" : \
           s eq "ext_gcra" ? "rate_limit_request (gcra)" : \
           s eq "ext_fixed_window" ? "rate_limit_request (fixed_window)" : \
           s eq "ext_sliding_window" ? "rate_limit_request (sliding_window)" : \
           s eq "many_durable" ? "request_many x1000 (durable)" : \
           s eq "many_unlogged" ? "request_many x1000 (unlogged)" : \
           s eq "many_memory" ? "request_many x1000 (memory)" : s
color(s) = s eq "select1" ? 0x888888 : s eq "update" ? 0x1f77b4 : s eq "upsert" ? 0x2ca02c : \
           s eq "seed" ? 0xd62728 : s eq "ext" ? 0x000000 : s eq "ext_sql" ? 0x8c564b : \
           s eq "ext_record" ? 0x17becf : \
           s eq "ext_denied" ? 0x9467bd : \
           s eq "ext_unlogged" || s eq "many_unlogged" ? 0x1f77b4 : \
           s eq "ext_memory" || s eq "many_memory" ? 0x2ca02c : \
           s eq "ext_gcra" ? 0xd62728 : s eq "ext_fixed_window" ? 0x9467bd : s eq "ext_sliding_window" ? 0x17becf : \
           s eq "many_durable" ? 0x000000 : 0xff7f0e
# Batches share their mode's colour, dashed, with a square point.
dash(s) = s eq "select1" || s eq "ext_denied" || s[1:4] eq "many" ? 2 : 1
point(s) = s[1:4] eq "many" ? 5 : 7
# NaN for the rows of other series: only the selected (panel, system) rows are plotted.
pick(p, s, col) = (strcol(1) eq p && strcol(2) eq s) ? column(col) : NaN

# Panels are placed by hand (one column per panel, 2 rows, above a strip for the one legend): a key
# drawn inside a narrow panel could not lay out its entries in one row.
set multiplot title "pg_ratelimit benchmark: throughput and p99 latency (of one call) by clients".(subtitle eq '' ? '' : ' ('.subtitle.')')
set grid
set xtics (1, 2, 4, 8)
set logscale x 2
# run.sh passes the largest client count of the run (a run of 1 and 2 clients needs no room up to 8).
if (!exists("maxclients")) maxclients = 8
set xrange [0.8:maxclients * 1.25]
set logscale y
set nokey
set size width, 0.43

col = 0
do for [p in panels] {
    set origin col * width, 0.50
    set title panel_title(p)
    set ylabel "decisions per second"
    unset xlabel
    plot for [s in systems] datafile using 3:(pick(p, s, 8)) with linespoints lw 2 pt point(s) ps 0.8 \
         lc rgb color(s) dt dash(s) notitle
    set origin col * width, 0.07
    set ylabel "p99 latency (µs)"
    set xlabel "clients"
    plot for [s in systems] datafile using 3:(pick(p, s, 6)) with linespoints lw 2 pt point(s) ps 0.8 \
         lc rgb color(s) dt dash(s) notitle
    col = col + 1
}

# The legend: an empty plot across the bottom strip whose only visible part is its key.
set origin 0, 0
set size 1, 0.07
unset title
unset xlabel
unset ylabel
unset tics
unset border
unset grid
set yrange [0:1]
set key center center horizontal maxrows 1 samplen 3 font ",10"
plot for [s in systems] NaN with linespoints lw 2 pt point(s) ps 0.8 lc rgb color(s) dt dash(s) title label(s)
unset multiplot
