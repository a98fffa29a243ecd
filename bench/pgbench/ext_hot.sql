-- rate_limit_request, admitted, always the same key (every call updates the same row).
SELECT * FROM rate_limit_request('k0', 'bench');
