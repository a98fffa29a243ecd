-- rate_limit_request, admitted (the harness's statement), on the calendar-month limit of bench/sql/setup.sql.
\set k random(0, 99999)
SELECT * FROM rate_limit_request('k' || :k, 'bench_calendar_month');
