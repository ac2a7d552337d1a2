-- A profile's jobs in one state (recall asks for a profile's failed ingests on every call):
-- found in the index, not by reading every job the profile ever queued.
CREATE INDEX job_queue_profile_state ON job_queue (profile, state, seq);
