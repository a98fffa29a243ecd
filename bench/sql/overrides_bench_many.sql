-- Per-key tiers for bench/instructions.sh --setup: 20,000 overrides on 'bench' (more than a backend reads
-- whole: keys are then looked up one by one, and at most 10,000 answers are remembered).
SELECT rate_limit_override('vip' || i, 'bench', 2e9) FROM generate_series(0, 19999) AS i;
