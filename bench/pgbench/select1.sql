-- The round-trip floor.
SELECT 1;
