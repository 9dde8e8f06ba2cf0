-- The purchases an authenticated upload or receipt owns while Apple's data names nobody: what grant's
-- token stamper (TOKEN_STAMP_APPS) reads each poll, oldest claim first, without scanning every claim.
CREATE INDEX ownership_claims_upload_owned ON ownership_claims (first_claimed_at) WHERE status = 'owner' AND NOT verified;
