-- How find_existing_page compares a topic with a note's names (file name, path, aliases,
-- title property, first H1): lower-cased, runs of spaces, hyphens and underscores as one space,
-- trimmed. The tools normalise the topic the same way before they ask.
CREATE FUNCTION otc_name_norm(text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN btrim(regexp_replace(lower($1), '[-_[:space:]]+', ' ', 'g'));
