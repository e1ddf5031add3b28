//! Work memory: agents' episodes (`agent_episodes`), one per tool call made while the caller
//! had a work session open, and the chunks those calls retrieved (`episode_retrievals`).
//!
//! An episode is written with its call's audit record, in the audit writer's statement. It
//! starts quarantined: `pending` until a task verdict (work_result) makes it `eligible` (0, +1)
//! or `held` (-1); a failed call is `held` at once and one whose summary reads as prompt
//! injection `blocked`. A forgotten episode keeps its row as a tombstone (who forgot it, when)
//! with its content and retrievals gone; no reader returns it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::{Result, TenantTx};

/// What the audit writer hands over for an episode besides the audit record itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeFacts {
    /// tool_call or verdict.
    pub kind: String,
    pub summary: String,
    pub blocked: bool,
    pub suspects: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retrievals: Vec<RetrievalFact>,
    /// What session_rerun replays: kept with the episode (never shown by the work-memory tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayFacts>,
}

/// A call as session_rerun replays it: its arguments as sent, and its answer's digest (and the
/// answer, when small) with what differs between runs left out (`otc_kernel::replay`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayFacts {
    pub args: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<Value>,
    /// What the recorder holds against its memory budget until the record is written.
    #[serde(skip)]
    pub held_bytes: usize,
}

/// One call a work session made, as recorded for replay.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    pub id: Uuid,
    pub at: DateTime<Utc>,
    pub tool: String,
    /// The vault as the call named it.
    pub vault: Option<String>,
    /// ok, or the error code it answered.
    pub outcome: String,
    /// None when the arguments were too large to keep.
    pub args: Option<Value>,
    pub digest: Option<String>,
    pub excerpt: Option<Value>,
}

/// One chunk a call returned, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievalFact {
    pub vault: String,
    pub path: String,
    pub ord: i32,
    /// 1 for the best.
    pub rank: i32,
    pub score: Option<f64>,
}

/// One episode as the readers see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    pub id: Uuid,
    pub ts: DateTime<Utc>,
    pub principal_id: Uuid,
    pub session_id: Uuid,
    pub vault: Option<String>,
    pub client: Option<String>,
    pub channel: String,
    pub episode_type: String,
    pub tool: String,
    pub status: String,
    pub error_code: Option<String>,
    pub summary: String,
    /// The paths the call named.
    pub paths: Value,
    pub duration_us: i64,
    pub blocked: bool,
    pub suspects: Vec<String>,
    pub trust: f32,
    pub eligibility: String,
    pub eligibility_reason: Option<String>,
    pub task_result: Option<i16>,
    pub verdict_at: Option<DateTime<Utc>>,
    pub amends: Option<Uuid>,
    /// Chunks the call retrieved.
    pub retrievals: i64,
}

/// Which episodes to read, newest first (or, with `words`, every word in the summary or tool).
#[derive(Debug, Clone, Default)]
pub struct EpisodeFilter {
    /// Only this principal's (None: every caller's).
    pub principal: Option<Uuid>,
    pub session: Option<Uuid>,
    pub tool: Option<String>,
    /// ok or error.
    pub status: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Only these eligibilities (None: every one but blocked, unless `include_blocked`).
    pub eligibility: Option<Vec<String>>,
    pub include_blocked: bool,
    pub min_trust: Option<f32>,
    /// Only judgeable work with no verdict yet.
    pub unstamped: bool,
    /// Only judgeable work (no verdict calls).
    pub judgeable: bool,
    pub words: Vec<String>,
    /// Before this episode (a cursor).
    pub before: Option<Uuid>,
    pub limit: i64,
}

/// What one verdict did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamped {
    pub stamped: i64,
    /// Episodes the verdict held (a -1 holds what it judged).
    pub demoted: i64,
    pub retrievals: i64,
}

/// One chunk a call of a session retrieved, with the call's verdict and the feedback on it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRetrieval {
    pub episode_id: Uuid,
    pub tool: String,
    pub ts: DateTime<Utc>,
    pub task_result: Option<i16>,
    pub vault: String,
    pub path: String,
    pub ord: i32,
    pub rank: i32,
    pub score: Option<f64>,
    pub feedback: Option<i16>,
}

/// One bucket of episode_stats.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct EpisodeBucket {
    pub key: String,
    pub episodes: i64,
    pub errors: i64,
    pub unstamped: i64,
    pub good: i64,
    pub neutral: i64,
    pub bad: i64,
    pub eligible: i64,
    pub held: i64,
    pub blocked: i64,
    pub mean_duration_ms: f64,
}

/// What episode_stats groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpisodeGroup {
    Tool,
    Status,
    ErrorCode,
    Session,
    Day,
    Eligibility,
    Result,
}

impl EpisodeGroup {
    fn column(self) -> &'static str {
        match self {
            EpisodeGroup::Tool => "tool",
            EpisodeGroup::Status => "status",
            EpisodeGroup::ErrorCode => "coalesce(error_code, 'none')",
            EpisodeGroup::Session => "session_id::text",
            EpisodeGroup::Day => "to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
            EpisodeGroup::Eligibility => "eligibility",
            EpisodeGroup::Result => "coalesce(task_result::text, 'unstamped')",
        }
    }
}

impl TenantTx {
    /// Of `principals`, those with a work session that was open at `since` or started after it:
    /// the only callers whose calls from `since` on can become episodes (the audit writer
    /// screens and keeps the episodes of those alone; `record_episodes` decides exactly).
    pub async fn principals_in_sessions_since(
        &mut self,
        principals: &[Uuid],
        since: DateTime<Utc>,
    ) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar!(
            r#"SELECT DISTINCT principal_id AS "principal_id!" FROM work_sessions
                WHERE tenant_id = $1 AND principal_id = ANY($2) AND (ended_at IS NULL OR ended_at >= $3)"#,
            self.tenant,
            principals,
            since
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Writes the episodes of an audit batch (records serialized as the audit writer sent them)
    /// whose caller had a work session open when the call was made (ended since, or not), with
    /// their retrievals, and links each to the failed call it retried.
    pub(crate) async fn record_episodes(&mut self, batch: &Value) -> Result<()> {
        let written = sqlx::query_scalar!(
            r#"WITH batch AS (
                   SELECT r.* FROM jsonb_to_recordset($2) AS r(id uuid, at timestamptz, principal_id uuid,
                          client_name text, surface text, action text, vault text, paths jsonb, outcome text,
                          duration_us bigint, episode jsonb)
                    WHERE r.episode IS NOT NULL AND r.principal_id IS NOT NULL),
               ins AS (
                   INSERT INTO agent_episodes (tenant_id, id, ts, principal_id, session_id, vault, client, channel,
                          episode_type, tool, status, error_code, summary, paths, duration_us, blocked, suspects,
                          trust, eligibility, eligibility_reason, replay_args, result_digest, result_excerpt)
                   SELECT $1, b.id, b.at, b.principal_id, s.id, b.vault, b.client_name, b.surface,
                          b.episode->>'kind', b.action,
                          CASE WHEN b.outcome = 'ok' THEN 'ok' ELSE 'error' END, NULLIF(b.outcome, 'ok'),
                          b.episode->>'summary', coalesce(b.paths, '[]'), b.duration_us,
                          (b.episode->>'blocked')::boolean,
                          ARRAY(SELECT jsonb_array_elements_text(b.episode->'suspects')),
                          CASE WHEN b.outcome = 'ok' THEN 0.5 ELSE 0.2 END,
                          CASE WHEN (b.episode->>'blocked')::boolean THEN 'blocked'
                               WHEN b.outcome <> 'ok' THEN 'held' ELSE 'pending' END,
                          CASE WHEN (b.episode->>'blocked')::boolean THEN 'poison_suspected'
                               WHEN b.outcome <> 'ok' THEN 'call_failed' END,
                          b.episode->'replay'->'args', b.episode->'replay'->>'digest',
                          b.episode->'replay'->'excerpt'
                     FROM batch b
                     JOIN LATERAL (SELECT ws.id FROM work_sessions ws
                                    WHERE ws.tenant_id = $1 AND ws.principal_id = b.principal_id
                                      AND ws.started_at <= b.at AND (ws.ended_at IS NULL OR ws.ended_at >= b.at)
                                    ORDER BY ws.started_at DESC LIMIT 1) s ON true
                   ON CONFLICT DO NOTHING
                   RETURNING id, session_id, principal_id, ts),
               got AS (
                   INSERT INTO episode_retrievals (tenant_id, episode_id, principal_id, session_id, vault, path, ord,
                          rank, score, ts)
                   SELECT $1, ins.id, ins.principal_id, ins.session_id, x.vault, x.path, x.ord,
                          x.rank, x.score, ins.ts
                     FROM ins JOIN batch b ON b.id = ins.id,
                          jsonb_to_recordset(b.episode->'retrievals')
                              AS x(vault text, path text, ord int, rank int, score float8)
                   ON CONFLICT DO NOTHING
                   RETURNING 1)
               SELECT ins.id AS "id!" FROM ins"#,
            self.tenant,
            batch
        )
        .fetch_all(&mut *self.tx)
        .await?;
        if written.is_empty() {
            return Ok(());
        }
        sqlx::query!(
            r#"UPDATE agent_episodes e
                  SET amends = (SELECT p.id FROM agent_episodes p
                                 WHERE p.tenant_id = e.tenant_id AND p.session_id = e.session_id
                                   AND p.tool = e.tool AND p.summary = e.summary AND p.status = 'error'
                                   AND p.ts <= e.ts AND p.id <> e.id AND p.forgotten_at IS NULL
                                 ORDER BY p.ts DESC LIMIT 1)
                WHERE e.tenant_id = $1 AND e.id = ANY($2) AND e.episode_type = 'tool_call'"#,
            self.tenant,
            &written
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Episodes matching `filter`, newest first (forgotten ones never).
    pub async fn episodes(&mut self, filter: &EpisodeFilter) -> Result<Vec<Episode>> {
        if filter.eligibility.as_deref() == Some(&["eligible".to_string()]) {
            return self.eligible_episodes(filter).await;
        }
        let patterns: Vec<String> = filter.words.iter().map(|w| format!("%{}%", like_escape(w))).collect();
        Ok(sqlx::query_as!(
            Episode,
            r#"SELECT e.id, e.ts, e.principal_id, e.session_id, e.vault, e.client, e.channel, e.episode_type, e.tool,
                      e.status, e.error_code, e.summary, e.paths, e.duration_us, e.blocked, e.suspects, e.trust, e.eligibility,
                      e.eligibility_reason, e.task_result, e.verdict_at, e.amends,
                      (SELECT count(*) FROM episode_retrievals r
                        WHERE r.tenant_id = e.tenant_id AND r.episode_id = e.id) AS "retrievals!"
                 FROM agent_episodes e
                WHERE e.tenant_id = $1 AND e.forgotten_at IS NULL
                  AND ($2::uuid IS NULL OR e.principal_id = $2)
                  AND ($3::uuid IS NULL OR e.session_id = $3)
                  AND ($4::text IS NULL OR e.tool = $4)
                  AND ($5::text IS NULL OR e.status = $5)
                  AND ($6::timestamptz IS NULL OR e.ts >= $6)
                  AND ($7::timestamptz IS NULL OR e.ts < $7)
                  AND (CASE WHEN $8::text[] IS NULL THEN ($9 OR e.eligibility <> 'blocked')
                            ELSE e.eligibility = ANY($8) END)
                  AND ($10::real IS NULL OR e.trust >= $10)
                  AND (NOT $11 OR (e.task_result IS NULL AND e.episode_type = 'tool_call'))
                  AND (NOT $15 OR e.episode_type = 'tool_call')
                  AND NOT EXISTS (SELECT 1 FROM unnest($12::text[]) AS w(p)
                                   WHERE e.summary NOT ILIKE w.p AND e.tool NOT ILIKE w.p)
                  AND ($13::uuid IS NULL OR e.id < $13)
                ORDER BY e.id DESC
                LIMIT $14"#,
            self.tenant,
            filter.principal,
            filter.session,
            filter.tool,
            filter.status,
            filter.since,
            filter.until,
            filter.eligibility.as_deref(),
            filter.include_blocked,
            filter.min_trust,
            filter.unstamped,
            &patterns,
            filter.before,
            filter.limit,
            filter.judgeable
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// [`TenantTx::episodes`] for eligible episodes alone, through their own partial index (its
    /// predicate written out, so a generic plan still uses it): a busy caller's log is mostly
    /// pending calls.
    async fn eligible_episodes(&mut self, filter: &EpisodeFilter) -> Result<Vec<Episode>> {
        let patterns: Vec<String> = filter.words.iter().map(|w| format!("%{}%", like_escape(w))).collect();
        Ok(sqlx::query_as!(
            Episode,
            r#"SELECT e.id, e.ts, e.principal_id, e.session_id, e.vault, e.client, e.channel, e.episode_type, e.tool,
                      e.status, e.error_code, e.summary, e.paths, e.duration_us, e.blocked, e.suspects, e.trust,
                      e.eligibility, e.eligibility_reason, e.task_result, e.verdict_at, e.amends,
                      (SELECT count(*) FROM episode_retrievals r
                        WHERE r.tenant_id = e.tenant_id AND r.episode_id = e.id) AS "retrievals!"
                 FROM agent_episodes e
                WHERE e.tenant_id = $1 AND e.eligibility = 'eligible' AND e.forgotten_at IS NULL
                  AND ($2::uuid IS NULL OR e.principal_id = $2)
                  AND ($3::uuid IS NULL OR e.session_id = $3)
                  AND ($4::text IS NULL OR e.tool = $4)
                  AND ($5::timestamptz IS NULL OR e.ts >= $5)
                  AND ($6::timestamptz IS NULL OR e.ts < $6)
                  AND ($7::real IS NULL OR e.trust >= $7)
                  AND (NOT $8 OR e.episode_type = 'tool_call')
                  AND NOT EXISTS (SELECT 1 FROM unnest($9::text[]) AS w(p)
                                   WHERE e.summary NOT ILIKE w.p AND e.tool NOT ILIKE w.p)
                  AND ($11::text IS NULL OR e.status = $11)
                  AND (NOT $12 OR (e.task_result IS NULL AND e.episode_type = 'tool_call'))
                  AND ($13::uuid IS NULL OR e.id < $13)
                ORDER BY e.id DESC
                LIMIT $10"#,
            self.tenant,
            filter.principal,
            filter.session,
            filter.tool,
            filter.since,
            filter.until,
            filter.min_trust,
            filter.judgeable,
            &patterns,
            filter.limit,
            filter.status,
            filter.unstamped,
            filter.before
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// One episode by id (None when there is none, or it was forgotten).
    pub async fn episode(&mut self, id: Uuid) -> Result<Option<Episode>> {
        Ok(sqlx::query_as!(
            Episode,
            r#"SELECT e.id, e.ts, e.principal_id, e.session_id, e.vault, e.client, e.channel, e.episode_type, e.tool,
                      e.status, e.error_code, e.summary, e.paths, e.duration_us, e.blocked, e.suspects, e.trust, e.eligibility,
                      e.eligibility_reason, e.task_result, e.verdict_at, e.amends,
                      (SELECT count(*) FROM episode_retrievals r
                        WHERE r.tenant_id = e.tenant_id AND r.episode_id = e.id) AS "retrievals!"
                 FROM agent_episodes e
                WHERE e.tenant_id = $1 AND e.id = $2 AND e.forgotten_at IS NULL"#,
            self.tenant,
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// The episodes that amend `id` (retried it), oldest first.
    pub async fn amendments_of(&mut self, id: Uuid) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar!(
            r#"SELECT id FROM agent_episodes
                WHERE tenant_id = $1 AND amends = $2 AND forgotten_at IS NULL ORDER BY ts, id"#,
            self.tenant,
            id
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Stamps `result` on every judgeable episode of `session` with no verdict yet, up to
    /// `as_of`: 0 and +1 make pending ones eligible, -1 holds them. The session's retrievals
    /// from those calls count as stamped too.
    pub async fn stamp_episodes(&mut self, session: Uuid, result: i16, as_of: DateTime<Utc>) -> Result<Stamped> {
        let row = sqlx::query!(
            r#"WITH up AS (
                   UPDATE agent_episodes
                      SET task_result = $3::smallint, verdict_at = now(),
                          trust = CASE WHEN status = 'error' THEN LEAST(trust, 0.2)
                                       WHEN $3::smallint = 1 THEN 0.9 WHEN $3::smallint = 0 THEN 0.6 ELSE 0.1 END,
                          eligibility = CASE WHEN eligibility IN ('blocked', 'held') THEN eligibility
                                             WHEN $3::smallint = -1 THEN 'held' ELSE 'eligible' END,
                          eligibility_reason = CASE WHEN eligibility IN ('blocked', 'held') THEN eligibility_reason
                                                    WHEN $3::smallint = -1 THEN 'bad_task_result'
                                                    WHEN $3::smallint = 0 THEN 'neutral_task_result'
                                                    ELSE 'good_task_result' END
                    WHERE tenant_id = $1 AND session_id = $2 AND task_result IS NULL AND episode_type = 'tool_call'
                      AND forgotten_at IS NULL AND ts <= $4
                   RETURNING id, (eligibility = 'held' AND eligibility_reason = 'bad_task_result') AS demoted)
               SELECT count(*) AS "stamped!", count(*) FILTER (WHERE demoted) AS "demoted!",
                      (SELECT count(*) FROM episode_retrievals r
                        WHERE r.tenant_id = $1 AND r.episode_id IN (SELECT id FROM up)) AS "retrievals!"
                 FROM up"#,
            self.tenant,
            session,
            result,
            as_of
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(Stamped { stamped: row.stamped, demoted: row.demoted, retrievals: row.retrievals })
    }

    /// The calls work session `session` made, oldest first (at most `limit`), as recorded for
    /// replay; forgotten ones are left out.
    pub async fn session_calls(&mut self, session: Uuid, limit: i64) -> Result<Vec<RecordedCall>> {
        let rows = sqlx::query!(
            r#"SELECT id, ts, tool, vault, status, error_code, replay_args, result_digest, result_excerpt
                 FROM agent_episodes
                WHERE tenant_id = $1 AND session_id = $2 AND forgotten_at IS NULL AND episode_type = 'tool_call'
                ORDER BY ts, id LIMIT $3"#,
            self.tenant,
            session,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| RecordedCall {
                id: r.id,
                at: r.ts,
                tool: r.tool,
                vault: r.vault,
                outcome: if r.status == "ok" { "ok".into() } else { r.error_code.unwrap_or_else(|| "error".into()) },
                args: r.replay_args,
                digest: r.result_digest,
                excerpt: r.result_excerpt,
            })
            .collect())
    }

    /// Tombstones episode `id`: its summary and retrievals go, who forgot it and when stay.
    /// Returns when it was forgotten and how many retrievals went; None when there is no such
    /// episode (or it was forgotten already).
    pub async fn forget_episode(&mut self, id: Uuid, by: Uuid) -> Result<Option<(DateTime<Utc>, i64)>> {
        let row = sqlx::query!(
            r#"WITH f AS (
                   UPDATE agent_episodes
                      SET forgotten_at = now(), forgotten_by = $3, summary = '', paths = '[]', suspects = '{}',
                          client = NULL, vault = NULL, error_code = NULL, replay_args = NULL,
                          result_digest = NULL, result_excerpt = NULL
                    WHERE tenant_id = $1 AND id = $2 AND forgotten_at IS NULL
                   RETURNING id, forgotten_at),
               gone AS (
                   DELETE FROM episode_retrievals r USING f WHERE r.tenant_id = $1 AND r.episode_id = f.id RETURNING 1)
               SELECT f.forgotten_at AS "at!", (SELECT count(*) FROM gone) AS "retrievals!" FROM f"#,
            self.tenant,
            id,
            by
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(row.map(|r| (r.at, r.retrievals)))
    }

    /// Who owns episode `id` and whether it was forgotten (None: no such episode).
    pub async fn episode_owner(&mut self, id: Uuid) -> Result<Option<(Uuid, bool)>> {
        Ok(sqlx::query!(
            "SELECT principal_id, forgotten_at IS NOT NULL AS \"forgotten!\" FROM agent_episodes
              WHERE tenant_id = $1 AND id = $2",
            self.tenant,
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?
        .map(|r| (r.principal_id, r.forgotten)))
    }

    /// Counts of episodes (of `principal`, or every caller's) grouped by `group`, biggest first;
    /// buckets under `min_bucket` episodes are left out. Also the forgotten ones' count.
    pub async fn episode_stats(
        &mut self,
        principal: Option<Uuid>,
        group: EpisodeGroup,
        since: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
        min_bucket: i64,
        limit: i64,
    ) -> Result<(Vec<EpisodeBucket>, i64)> {
        // The grouping column is one of a fixed set, never the caller's text.
        let sql = format!(
            r#"SELECT {col} AS key, count(*) AS episodes,
                      count(*) FILTER (WHERE status = 'error') AS errors,
                      count(*) FILTER (WHERE task_result IS NULL AND episode_type = 'tool_call') AS unstamped,
                      count(*) FILTER (WHERE task_result = 1) AS good,
                      count(*) FILTER (WHERE task_result = 0) AS neutral,
                      count(*) FILTER (WHERE task_result = -1) AS bad,
                      count(*) FILTER (WHERE eligibility = 'eligible') AS eligible,
                      count(*) FILTER (WHERE eligibility = 'held') AS held,
                      count(*) FILTER (WHERE eligibility = 'blocked') AS blocked,
                      round(avg(duration_us) / 1000.0, 2)::float8 AS mean_duration_ms
                 FROM agent_episodes
                WHERE tenant_id = $1 AND forgotten_at IS NULL AND ($2::uuid IS NULL OR principal_id = $2)
                  AND ($3::timestamptz IS NULL OR ts >= $3) AND ($4::timestamptz IS NULL OR ts < $4)
                GROUP BY 1 HAVING count(*) >= $5
                ORDER BY count(*) DESC, 1 LIMIT $6"#,
            col = group.column()
        );
        let buckets: Vec<EpisodeBucket> = sqlx::query_as(&sql)
            .bind(self.tenant)
            .bind(principal)
            .bind(since)
            .bind(until)
            .bind(min_bucket)
            .bind(limit)
            .fetch_all(&mut *self.tx)
            .await?;
        let forgotten = sqlx::query_scalar!(
            r#"SELECT count(*) AS "n!" FROM agent_episodes
                WHERE tenant_id = $1 AND forgotten_at IS NOT NULL AND ($2::uuid IS NULL OR principal_id = $2)
                  AND ($3::timestamptz IS NULL OR ts >= $3) AND ($4::timestamptz IS NULL OR ts < $4)"#,
            self.tenant,
            principal,
            since,
            until
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok((buckets, forgotten))
    }

    /// Marks the `last_n` latest retrievals of chunk (`path`, `ord`; every chunk of the note when
    /// None) by `principal` in `session` as useful (1) or not (-1); how many it marked.
    pub async fn retrieval_feedback(
        &mut self,
        principal: Uuid,
        session: Uuid,
        path: &str,
        ord: Option<i32>,
        feedback: i16,
        last_n: i64,
    ) -> Result<i64> {
        Ok(sqlx::query!(
            r#"UPDATE episode_retrievals r SET feedback = $6, feedback_at = now()
                WHERE (r.tenant_id, r.episode_id, r.rank) IN (
                      SELECT tenant_id, episode_id, rank FROM episode_retrievals
                       WHERE tenant_id = $1 AND session_id = $3 AND principal_id = $2 AND path = $4
                         AND ($5::int IS NULL OR ord = $5)
                       ORDER BY ts DESC, rank LIMIT $7)"#,
            self.tenant,
            principal,
            session,
            path,
            ord,
            feedback,
            last_n
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected() as i64)
    }

    /// What the calls of `principal`'s `session` retrieved over a window, oldest first.
    pub async fn session_retrievals(
        &mut self,
        principal: Uuid,
        session: Uuid,
        since: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
        limit: i64,
    ) -> Result<Vec<SessionRetrieval>> {
        Ok(sqlx::query_as!(
            SessionRetrieval,
            r#"SELECT r.episode_id, e.tool, r.ts, e.task_result, r.vault, r.path, r.ord, r.rank, r.score, r.feedback
                 FROM episode_retrievals r
                 JOIN agent_episodes e ON e.tenant_id = r.tenant_id AND e.id = r.episode_id
                WHERE r.tenant_id = $1 AND r.principal_id = $2 AND r.session_id = $3 AND e.forgotten_at IS NULL
                  AND ($4::timestamptz IS NULL OR r.ts >= $4) AND ($5::timestamptz IS NULL OR r.ts < $5)
                ORDER BY r.ts, r.rank LIMIT $6"#,
            self.tenant,
            principal,
            session,
            since,
            until,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// The principal's open work session, latest first (any vault).
    pub async fn open_session_of(&mut self, principal: Uuid) -> Result<Option<Uuid>> {
        Ok(sqlx::query_scalar!(
            "SELECT id FROM work_sessions WHERE tenant_id = $1 AND principal_id = $2 AND ended_at IS NULL
              ORDER BY started_at DESC LIMIT 1",
            self.tenant,
            principal
        )
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// Whether `session` is one of `principal`'s (any vault, open or ended).
    pub async fn owns_session(&mut self, principal: Uuid, session: Uuid) -> Result<bool> {
        Ok(sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM work_sessions WHERE tenant_id = $1 AND id = $2 AND principal_id = $3)
                   AS "owns!""#,
            self.tenant,
            session,
            principal
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }
}

/// `text` with LIKE's wildcards taken literally.
fn like_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}
