-- Keys: the highest key version ever issued per user, so keys registered again after
-- DELETE /api/keys continue the numbering (versions never repeat for a user), and an index
-- for public-key lookups by Matrix user id.

CREATE TABLE user_key_versions (
    user_id      TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    last_version INTEGER NOT NULL
);
INSERT INTO user_key_versions (user_id, last_version) SELECT user_id, key_version FROM user_keys;

CREATE INDEX users_matrix_user_id ON users(matrix_user_id);
