-- Per-key tiers for bench/instructions.sh --setup: overrides exist, but on another limit than the one the
-- scripts call (the cost of a table that is not empty, for limits without any override).
SELECT rate_limit_define('bench_tiers', rate => 1e9, period => '1 second');
SELECT rate_limit_override('vip' || i, 'bench_tiers', 2e9) FROM generate_series(0, 99) AS i;
