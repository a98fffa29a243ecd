-- Per-key tiers for bench/instructions.sh --setup: 100 overrides on 'bench' itself, for keys vip0..vip99
-- that the ext script never calls (ext: keys without an override of a limit with overrides) and that
-- ext_override calls (keys with one).
SELECT rate_limit_override('vip' || i, 'bench', 2e9) FROM generate_series(0, 99) AS i;
