#include "cluster/Limiter.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "cluster/Redis.hpp"

namespace sluice::cluster {

namespace net = boost::asio;
using Ms = std::int64_t;

namespace {

constexpr Ms kDayMs = 86'400'000;
// A refused concurrency slot frees when some request ends, which nobody can predict.
constexpr Ms kConcurrencyRetryMs = 1000;

Ms floorDiv(Ms a, Ms b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

Ms nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Which limits refused, as bits; the same numbering in C++ and in the Lua scripts.
enum : unsigned { kReq = 1, kTok = 2, kConc = 4, kDay = 8, kMonth = 16, kTotal = 32 };

// What one admission check found, from either backend; decide() turns it into a Decision.
struct Verdict {
  unsigned failed = 0;
  Ms now = 0;
  Ms retry_requests = 0;
  Ms retry_tokens = 0;  // -1: the estimate alone is over the TPM limit, it never fits
  Decision numbers;     // limit_* / remaining_* / reset_*
};

Decision decide(const Verdict& v) {
  Decision d = v.numbers;
  d.allowed = v.failed == 0;
  if (d.allowed) return d;
  static constexpr std::array<std::pair<unsigned, LimitKind>, 6> kOrder{{{kReq, LimitKind::Requests},
                                                                         {kTok, LimitKind::Tokens},
                                                                         {kConc, LimitKind::Concurrency},
                                                                         {kDay, LimitKind::BudgetDaily},
                                                                         {kMonth, LimitKind::BudgetMonthly},
                                                                         {kTotal, LimitKind::BudgetTotal}}};
  for (auto [bit, kind] : kOrder) {
    if (v.failed & bit) {
      d.hit = kind;
      break;
    }
  }
  // Trying again can succeed only once every limit that refused has room again.
  bool never = (v.failed & kTotal) || ((v.failed & kTok) && v.retry_tokens < 0);
  Ms retry = 0;
  if (v.failed & kReq) retry = std::max(retry, v.retry_requests);
  if (v.failed & kTok) retry = std::max(retry, v.retry_tokens);
  if (v.failed & kConc) retry = std::max(retry, kConcurrencyRetryMs);
  if (v.failed & kDay) retry = std::max(retry, dayStartMs(dayIndex(v.now) + 1) - v.now);
  if (v.failed & kMonth) retry = std::max(retry, monthStartMs(monthIndex(v.now) + 1) - v.now);
  d.retry_after_ms = never ? 0 : retry;
  return d;
}

bool hasBudget(const LimitSpec& s) {
  return s.budget_daily_usd || s.budget_monthly_usd || s.budget_total_usd;
}

// ---------------------------------------------------------------- local counters

// Per-subject state in process memory, in shards so workers rarely contend on one mutex.
class LocalCounters {
 public:
  LocalCounters(Ms window, Ms lease) : window_(window), lease_(lease) {}

  Verdict acquire(const Subject& subject, const Charge& charge, Ms now) {
    auto& shard = shardOf(subject.id);
    std::lock_guard lock(shard.mu);
    auto& st = shard.subjects[subject.id];
    now = std::max(now, st.last);  // admission times stay ordered when the wall clock steps back
    st.last = now;
    expire(st, now);
    const auto& spec = subject.spec;
    Verdict v;
    v.now = now;
    if (spec.rpm > 0) {
      auto n = static_cast<Ms>(st.rpm.size());
      v.numbers.limit_requests = spec.rpm;
      // The entry that has to leave the window before one more request fits.
      Ms idx;
      if (n + 1 > spec.rpm) {
        v.failed |= kReq;
        idx = n - spec.rpm;
        v.numbers.remaining_requests = std::max<Ms>(spec.rpm - n, 0);
      } else {
        idx = n + 1 - spec.rpm;
        v.numbers.remaining_requests = spec.rpm - n - 1;
      }
      if (idx >= 0) v.numbers.reset_requests_ms = (idx < n ? st.rpm[idx] : now) + window_ - now;
      v.retry_requests = v.numbers.reset_requests_ms;
    }
    if (spec.tpm > 0) {
      v.numbers.limit_tokens = spec.tpm;
      if (st.tpm_sum + charge.tokens > spec.tpm) {
        v.failed |= kTok;
        v.numbers.remaining_tokens = std::max<Ms>(spec.tpm - st.tpm_sum, 0);
        v.retry_tokens = charge.tokens > spec.tpm ? -1 : tokensFreeAt(st, st.tpm_sum + charge.tokens - spec.tpm, now);
        if (!st.tpm.empty()) v.numbers.reset_tokens_ms = st.tpm.back().at + window_ - now;
      } else {
        v.numbers.remaining_tokens = spec.tpm - st.tpm_sum - charge.tokens;
        if (charge.tokens > 0) {
          v.numbers.reset_tokens_ms = window_;
        } else if (!st.tpm.empty()) {
          v.numbers.reset_tokens_ms = st.tpm.back().at + window_ - now;
        }
      }
    }
    if (spec.max_concurrent > 0 && st.slots + 1 > spec.max_concurrent) v.failed |= kConc;
    if (hasBudget(spec)) {
      roll(st, now);
      const bool idle = st.reservations == 0;
      auto over = [&](const std::optional<double>& budget, double spent) {
        return budget && !(spent + st.reserved + charge.cost_usd <= *budget || (idle && spent < *budget));
      };
      if (over(spec.budget_daily_usd, st.day_usd)) v.failed |= kDay;
      if (over(spec.budget_monthly_usd, st.month_usd)) v.failed |= kMonth;
      if (over(spec.budget_total_usd, st.total_usd)) v.failed |= kTotal;
    }
    if (v.failed == 0) charge_(st, spec, charge, now);
    return v;
  }

  void settle(const Subject& subject, const Charge& charge, std::int64_t actual_tokens, double actual_cost, Ms now) {
    auto& shard = shardOf(subject.id);
    std::lock_guard lock(shard.mu);
    auto& st = shard.subjects[subject.id];
    now = std::max(now, st.last);
    expire(st, now);
    if (auto it = st.inflight.find(charge.request_id); it != st.inflight.end()) {
      const auto at = it->second.at;
      // The window is ordered by time: look only at the entries charged at that instant.
      auto e = std::partition_point(st.tpm.begin(), st.tpm.end(), [&](const TokenEntry& x) { return x.at < at; });
      for (; e != st.tpm.end() && e->at == at; ++e) {
        if (e->request_id == charge.request_id) {
          st.tpm_sum += actual_tokens - e->tokens;
          e->tokens = actual_tokens;
          break;
        }
      }
      release(st, it);
    }
    if (hasBudget(subject.spec)) commit(st, actual_cost, now);
  }

  // Spend of a request charged elsewhere (Redis): kept here too so a fallback starts from it.
  void commitSpend(const std::string& subject_id, double cost, Ms now) {
    auto& shard = shardOf(subject_id);
    std::lock_guard lock(shard.mu);
    commit(shard.subjects[subject_id], cost, now);
  }

  void seed(const std::string& subject_id, const SpendSeed& seed, Ms now) {
    auto& shard = shardOf(subject_id);
    std::lock_guard lock(shard.mu);
    auto& st = shard.subjects[subject_id];
    roll(st, now);
    if (seed.day_index > st.day) {
      st.day = seed.day_index;
      st.day_usd = seed.day_usd;
    } else if (seed.day_index == st.day) {
      st.day_usd = std::max(st.day_usd, seed.day_usd);
    }
    if (seed.month_index > st.month) {
      st.month = seed.month_index;
      st.month_usd = seed.month_usd;
    } else if (seed.month_index == st.month) {
      st.month_usd = std::max(st.month_usd, seed.month_usd);
    }
    st.total_usd = std::max(st.total_usd, seed.total_usd);
  }

  Spend spend(const std::string& subject_id, Ms now) {
    auto& shard = shardOf(subject_id);
    std::lock_guard lock(shard.mu);
    auto& st = shard.subjects[subject_id];
    expire(st, std::max(now, st.last));
    roll(st, now);
    return Spend{st.day_usd, st.month_usd, st.total_usd, st.reserved};
  }

 private:
  struct TokenEntry {
    Ms at;
    std::int64_t tokens;
    std::string request_id;
  };
  struct InFlight {
    Ms at;
    Ms expires;
    double cost;
    bool slot;
    bool reserved;
  };
  struct State {
    std::deque<Ms> rpm;  // admission times, oldest first
    std::deque<TokenEntry> tpm;
    std::int64_t tpm_sum = 0;
    std::unordered_map<std::string, InFlight> inflight;  // by request id
    std::set<std::pair<Ms, std::string>> leases;         // (expiry, request id) of inflight
    std::int64_t slots = 0;
    std::size_t reservations = 0;
    double reserved = 0;
    std::int64_t day = std::numeric_limits<std::int64_t>::min();
    std::int64_t month = std::numeric_limits<std::int64_t>::min();
    double day_usd = 0, month_usd = 0, total_usd = 0;
    Ms last = 0;
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, State> subjects;
  };

  Shard& shardOf(const std::string& id) { return shards_[std::hash<std::string>{}(id) % shards_.size()]; }

  void expire(State& st, Ms now) {
    const Ms cutoff = now - window_;
    while (!st.rpm.empty() && st.rpm.front() <= cutoff) st.rpm.pop_front();
    while (!st.tpm.empty() && st.tpm.front().at <= cutoff) {
      st.tpm_sum -= st.tpm.front().tokens;
      st.tpm.pop_front();
    }
    while (!st.leases.empty() && st.leases.begin()->first <= now) {
      release(st, st.inflight.find(st.leases.begin()->second));
    }
  }

  void release(State& st, std::unordered_map<std::string, InFlight>::iterator it) {
    const auto& f = it->second;
    if (f.slot) --st.slots;
    if (f.reserved) {
      --st.reservations;
      // Nothing in flight: drop the rounding a long run of += / -= leaves behind.
      st.reserved = st.reservations == 0 ? 0 : st.reserved - f.cost;
    }
    st.leases.erase({f.expires, it->first});
    st.inflight.erase(it);
  }

  void charge_(State& st, const LimitSpec& spec, const Charge& charge, Ms now) {
    if (spec.rpm > 0) st.rpm.push_back(now);
    if (spec.tpm > 0) {
      st.tpm.push_back(TokenEntry{now, charge.tokens, charge.request_id});
      st.tpm_sum += charge.tokens;
    }
    const bool slot = spec.max_concurrent > 0;
    const bool reserve = hasBudget(spec);
    if (spec.tpm == 0 && !slot && !reserve) return;  // settle has nothing to undo
    if (auto old = st.inflight.find(charge.request_id); old != st.inflight.end()) release(st, old);
    const Ms expires = now + lease_;
    st.inflight.emplace(charge.request_id, InFlight{now, expires, charge.cost_usd, slot, reserve});
    st.leases.emplace(expires, charge.request_id);
    if (slot) ++st.slots;
    if (reserve) {
      ++st.reservations;
      st.reserved += charge.cost_usd;
    }
  }

  Ms tokensFreeAt(const State& st, std::int64_t need, Ms now) const {
    std::int64_t freed = 0;
    for (const auto& e : st.tpm) {
      freed += e.tokens;
      if (freed >= need) return e.at + window_ - now;
    }
    return 0;
  }

  static void roll(State& st, Ms now) {
    if (auto d = dayIndex(now); d > st.day) {
      st.day = d;
      st.day_usd = 0;
    }
    if (auto m = monthIndex(now); m > st.month) {
      st.month = m;
      st.month_usd = 0;
    }
  }

  static void commit(State& st, double cost, Ms now) {
    roll(st, now);
    st.day_usd += cost;
    st.month_usd += cost;
    st.total_usd += cost;
  }

  const Ms window_;
  const Ms lease_;
  std::array<Shard, 16> shards_;
};

// ---------------------------------------------------------------- Redis scripts
//
// Each acquire / settle is one script, so a check and its charge are atomic across instances,
// and every script reads the time from Redis (TIME), so instances with skewed clocks agree.
// Keys of a subject share BASE = PREFIX "lim:{" ID "}" (one hash slot):
//   BASE:rpm   zset request id -> admission ms
//   BASE:tpm   zset request id -> admission ms;  BASE:tpmw hash request id -> tokens;
//   BASE:tpms  the sum of BASE:tpmw (so admission does not add up the window each time)
//   BASE:conc  zset request id -> lease expiry ms
//   BASE:res   zset request id -> lease expiry ms;  BASE:resv hash request id -> estimated USD
//   BASE:sd:DAY, BASE:sm:MONTH, BASE:st   committed USD (INCRBYFLOAT)
// Every key carries a TTL: windows expire a second after their window, leases after the lease,
// day / month / total counters after 3 / 62 / 400 days (the store re-seeds them).

const std::string kLuaPrelude = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = ARGV[1]
local rk, tk, wk, sk = b .. ':rpm', b .. ':tpm', b .. ':tpmw', b .. ':tpms'
local ck, zk, hk = b .. ':conc', b .. ':res', b .. ':resv'
-- (year - 1970) * 12 + month - 1 of a day number (days since 1970-01-01, civil calendar)
local function month_index(days)
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return (y - 1970) * 12 + m - 1
end
local function day_key(day) return b .. ':sd:' .. day end
local function month_key(day) return b .. ':sm:' .. month_index(day) end
-- HMGET / HDEL over any number of fields (unpack() is bounded by the Lua stack)
local function each_chunk(list, fn)
  for i = 1, #list, 1000 do fn({unpack(list, i, math.min(i + 999, #list))}) end
end
)lua";

// ARGV: base, request id, window ms, lease ms, rpm, tpm, tokens, max concurrent,
//       daily, monthly, total budget ("" = none), estimated USD
// -> {failed bits, now, retry requests, retry tokens, limit/remaining/reset requests, ... tokens}
const std::string kAcquireLua = kLuaPrelude + R"lua(
local rid = ARGV[2]
local window, lease = tonumber(ARGV[3]), tonumber(ARGV[4])
local rpm, tpm, tokens, maxc = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local bd, bm, bt, cost = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local cutoff = now - window
local failed, retry_req, retry_tok = 0, 0, 0
local lr, rr, sr, lt, rt, st = -1, -1, 0, -1, -1, 0

if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', rk, '-inf', cutoff)
  local n = redis.call('ZCARD', rk)
  lr = rpm
  local idx -- the entry that has to leave the window before one more request fits
  if n + 1 > rpm then
    failed = failed + 1
    idx = n - rpm
    rr = math.max(rpm - n, 0)
  else
    idx = n + 1 - rpm
    rr = rpm - n - 1
  end
  if idx >= 0 then
    local at = now
    if idx < n then at = tonumber(redis.call('ZRANGE', rk, idx, idx, 'WITHSCORES')[2]) end
    sr = at + window - now
  end
  retry_req = sr
end

if tpm > 0 then
  local sum = tonumber(redis.call('GET', sk) or '0')
  local old = redis.call('ZRANGEBYSCORE', tk, '-inf', cutoff)
  if #old > 0 then
    each_chunk(old, function(part)
      local ws = redis.call('HMGET', wk, unpack(part))
      for j = 1, #part do sum = sum - (tonumber(ws[j]) or 0) end
      redis.call('HDEL', wk, unpack(part))
    end)
    redis.call('ZREMRANGEBYSCORE', tk, '-inf', cutoff)
  end
  local n = redis.call('ZCARD', tk)
  if n == 0 then sum = 0 end
  redis.call('SET', sk, sum, 'PX', window + 1000)
  lt = tpm
  local newest
  if n > 0 then newest = tonumber(redis.call('ZRANGE', tk, -1, -1, 'WITHSCORES')[2]) end
  if sum + tokens > tpm then
    failed = failed + 2
    rt = math.max(tpm - sum, 0)
    if newest then st = newest + window - now end
    if tokens > tpm then
      retry_tok = -1
    else
      local need, freed = sum + tokens - tpm, 0
      local entries = redis.call('ZRANGE', tk, 0, -1, 'WITHSCORES')
      local members, scores = {}, {}
      for i = 1, #entries, 2 do
        members[#members + 1] = entries[i]
        scores[#scores + 1] = tonumber(entries[i + 1])
      end
      local k = 0
      each_chunk(members, function(part)
        if retry_tok ~= 0 then return end
        local ws = redis.call('HMGET', wk, unpack(part))
        for j = 1, #part do
          k = k + 1
          freed = freed + (tonumber(ws[j]) or 0)
          if freed >= need then
            retry_tok = scores[k] + window - now
            return
          end
        end
      end)
    end
  else
    rt = tpm - sum - tokens
    if tokens > 0 then st = window elseif newest then st = newest + window - now end
  end
end

if maxc > 0 then
  redis.call('ZREMRANGEBYSCORE', ck, '-inf', now)
  if redis.call('ZCARD', ck) + 1 > maxc then failed = failed + 4 end
end

local budget = bd or bm or bt
if budget then
  local gone = redis.call('ZRANGEBYSCORE', zk, '-inf', now)
  if #gone > 0 then
    each_chunk(gone, function(part) redis.call('HDEL', hk, unpack(part)) end)
    redis.call('ZREMRANGEBYSCORE', zk, '-inf', now)
  end
  local vals = redis.call('HVALS', hk)
  local reserved = 0
  for i = 1, #vals do reserved = reserved + tonumber(vals[i]) end
  local idle = #vals == 0
  local day = math.floor(now / 86400000)
  local function over(limit, key)
    if not limit then return false end
    local spent = tonumber(redis.call('GET', key) or '0')
    return not (spent + reserved + cost <= limit or (idle and spent < limit))
  end
  if over(bd, day_key(day)) then failed = failed + 8 end
  if over(bm, month_key(day)) then failed = failed + 16 end
  if over(bt, b .. ':st') then failed = failed + 32 end
end

if failed == 0 then
  if rpm > 0 then
    redis.call('ZADD', rk, now, rid)
    redis.call('PEXPIRE', rk, window + 1000)
  end
  if tpm > 0 then
    redis.call('ZADD', tk, now, rid)
    redis.call('HSET', wk, rid, tokens)
    redis.call('INCRBY', sk, tokens)
    for _, k in ipairs({tk, wk, sk}) do redis.call('PEXPIRE', k, window + 1000) end
  end
  if maxc > 0 then
    redis.call('ZADD', ck, now + lease, rid)
    redis.call('PEXPIRE', ck, lease + 1000)
  end
  if budget then
    redis.call('ZADD', zk, now + lease, rid)
    redis.call('HSET', hk, rid, ARGV[12])
    redis.call('PEXPIRE', zk, lease + 1000)
    redis.call('PEXPIRE', hk, lease + 1000)
  end
end
return {failed, now, retry_req, retry_tok, lr, rr, sr, lt, rt, st}
)lua";

// ARGV: base, request id, window ms, actual tokens, "1" when the subject has a budget, actual USD
const std::string kSettleLua = kLuaPrelude + R"lua(
local rid = ARGV[2]
local at = redis.call('ZSCORE', tk, rid)
if at and tonumber(at) > now - tonumber(ARGV[3]) then
  -- the entry keeps its admission time; only its weight changes
  local delta = tonumber(ARGV[4]) - tonumber(redis.call('HGET', wk, rid) or '0')
  if delta ~= 0 then
    redis.call('HSET', wk, rid, ARGV[4])
    redis.call('INCRBY', sk, delta)
  end
end
redis.call('ZREM', ck, rid)
redis.call('ZREM', zk, rid)
redis.call('HDEL', hk, rid)
if ARGV[5] == '1' and tonumber(ARGV[6]) > 0 then
  local day = math.floor(now / 86400000)
  for _, kt in ipairs({{day_key(day), 3}, {month_key(day), 62}, {b .. ':st', 400}}) do
    redis.call('INCRBYFLOAT', kt[1], ARGV[6])
    redis.call('PEXPIRE', kt[1], kt[2] * 86400000)
  end
end
return 1
)lua";

// ARGV: base, day index, month index, day USD, month USD, total USD. Raises, never lowers.
const std::string kSeedLua = kLuaPrelude + R"lua(
for _, kv in ipairs({{b .. ':sd:' .. ARGV[2], ARGV[4], 3}, {b .. ':sm:' .. ARGV[3], ARGV[5], 62},
                     {b .. ':st', ARGV[6], 400}}) do
  if tonumber(kv[2]) > tonumber(redis.call('GET', kv[1]) or '0') then
    redis.call('SET', kv[1], kv[2], 'PX', kv[3] * 86400000)
  end
end
return 1
)lua";

// ARGV: base -> {day, month, total, reserved} USD as strings (Lua numbers would come back as
// integers).
const std::string kSpendLua = kLuaPrelude + R"lua(
local day = math.floor(now / 86400000)
local live = redis.call('ZRANGEBYSCORE', zk, '(' .. now, '+inf')
local reserved = 0
each_chunk(live, function(part)
  local vs = redis.call('HMGET', hk, unpack(part))
  for j = 1, #part do reserved = reserved + (tonumber(vs[j]) or 0) end
end)
return {redis.call('GET', day_key(day)) or '0', redis.call('GET', month_key(day)) or '0',
        redis.call('GET', b .. ':st') or '0', tostring(reserved)}
)lua";

const RedisScript& acquireScript() {
  static const RedisScript s(kAcquireLua);
  return s;
}
const RedisScript& settleScript() {
  static const RedisScript s(kSettleLua);
  return s;
}
const RedisScript& seedScript() {
  static const RedisScript s(kSeedLua);
  return s;
}
const RedisScript& spendScript() {
  static const RedisScript s(kSpendLua);
  return s;
}

const std::vector<std::string> kNoKeys;

std::string usd(const std::optional<double>& v) {
  return v ? fmt::format("{:.17g}", *v) : std::string();
}
std::string usd(double v) {
  return fmt::format("{:.17g}", v);
}

// The acquire script's reply; nullopt when it is not the shape the script returns.
std::optional<Verdict> parseVerdict(const RedisReply& r) {
  if (r.type != RedisReply::Type::Array || r.elements.size() != 10) return std::nullopt;
  for (const auto& e : r.elements) {
    if (e.type != RedisReply::Type::Integer) return std::nullopt;
  }
  auto at = [&](std::size_t i) { return r.elements[i].integer; };
  Verdict v;
  v.failed = static_cast<unsigned>(at(0));
  v.now = at(1);
  v.retry_requests = at(2);
  v.retry_tokens = at(3);
  v.numbers.limit_requests = at(4);
  v.numbers.remaining_requests = at(5);
  v.numbers.reset_requests_ms = at(6);
  v.numbers.limit_tokens = at(7);
  v.numbers.remaining_tokens = at(8);
  v.numbers.reset_tokens_ms = at(9);
  return v;
}

std::string replyProblem(const RedisResult& r) {
  if (!r.ok()) return r.error;
  if (r.reply.isError()) return r.reply.str;
  return "unexpected reply";
}

}  // namespace

// ---------------------------------------------------------------- Limiter

struct Limiter::Impl {
  explicit Impl(Options o)
      : opt(std::move(o)), window(opt.window.count()), lease(opt.lease.count()), local(window, lease) {
    if (opt.redis_url.empty()) return;
    auto ep = parseRedisUrl(opt.redis_url);
    where = ep.host + ":" + std::to_string(ep.port);
    redis = std::make_unique<RedisAsyncClient>(ep, opt.redis_timeout);
    sync = std::make_unique<RedisSyncClient>(ep, opt.redis_timeout);
    if (opt.probe_interval.count() > 0) {
      prober = std::make_unique<RedisSyncClient>(ep, opt.redis_timeout);
      probe_thread = std::thread([this] { probeLoop(); });
    }
  }
  ~Impl() {
    if (!probe_thread.joinable()) return;
    {
      std::lock_guard lock(probe_mu);
      probe_stopping = true;
    }
    probe_cv.notify_all();
    probe_thread.join();
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Off the workers: a PING each probe_interval marks Redis up or down, so the gauge is right
  // within about a second even when no limited request comes.
  void probeLoop() {
    std::unique_lock lock(probe_mu);
    while (!probe_stopping) {
      lock.unlock();
      auto r = prober->command({"PING"});
      if (r.ok() && !r.reply.isError()) {
        markUp();
      } else {
        markDown("PING: " + replyProblem(r));
      }
      lock.lock();
      probe_cv.wait_for(lock, opt.probe_interval, [this] { return probe_stopping; });
    }
  }

  std::string base(const std::string& subject_id) const { return opt.key_prefix + "lim:{" + subject_id + "}"; }

  // While Redis is down, one caller per retry period gets to probe it; the others stay local.
  bool shouldTryRedis(Ms now) {
    if (up.load(std::memory_order_relaxed)) return true;
    Ms at = retry_at.load();
    return now >= at && retry_at.compare_exchange_strong(at, now + opt.redis_retry.count());
  }
  void markDown(const std::string& why) {
    retry_at.store(nowMs() + opt.redis_retry.count());
    if (up.exchange(false)) {
      spdlog::warn("limiter: Redis at {} is unreachable ({}); limits use this instance's counters until it answers",
                   where, why);
    }
  }
  void markUp() {
    if (!up.exchange(true)) spdlog::info("limiter: Redis at {} answers again; limits are shared again", where);
  }

  // Requests charged locally while Redis was down settle locally too.
  void rememberLocal(const std::string& key, Ms now) {
    std::lock_guard lock(local_mu);
    charged_locally[key] = now + lease;
    if (charged_locally.size() >= prune_at) {  // settles that never came
      std::erase_if(charged_locally, [&](const auto& kv) { return kv.second <= now; });
      prune_at = std::max<std::size_t>(64, charged_locally.size() * 2);
    }
    charged_locally_n.store(charged_locally.size());
  }
  bool takeLocal(const std::string& key) {
    if (charged_locally_n.load() == 0) return false;  // the usual case: no lock
    std::lock_guard lock(local_mu);
    bool found = charged_locally.erase(key) > 0;
    charged_locally_n.store(charged_locally.size());
    return found;
  }

  Options opt;
  const Ms window;
  const Ms lease;
  LocalCounters local;
  std::string where;
  std::unique_ptr<RedisAsyncClient> redis;
  std::unique_ptr<RedisSyncClient> sync;
  std::unique_ptr<RedisSyncClient> prober;  // the probe thread's own connection
  std::atomic<bool> up{true};
  std::atomic<Ms> retry_at{0};
  std::atomic<std::uint64_t> fallbacks{0};
  std::array<std::atomic<std::uint64_t>, 7> refused{};  // by LimitKind

  std::mutex local_mu;
  std::unordered_map<std::string, Ms> charged_locally;  // subject id '\n' request id -> lease end
  std::atomic<std::size_t> charged_locally_n{0};
  std::size_t prune_at = 64;

  std::mutex probe_mu;
  std::condition_variable probe_cv;
  bool probe_stopping = false;  // under probe_mu
  std::thread probe_thread;     // last: started in the constructor, joined in the destructor
};

Limiter::Limiter(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Limiter::~Limiter() = default;

net::awaitable<Decision> Limiter::acquire(const Subject& subject, const Charge& charge) {
  if (!subject.spec.any()) co_return Decision{};
  auto& im = *impl_;
  std::optional<Verdict> verdict;
  if (im.redis && im.shouldTryRedis(nowMs())) {
    const auto& s = subject.spec;
    std::vector<std::string> args{im.base(subject.id),           charge.request_id,
                                  std::to_string(im.window),     std::to_string(im.lease),
                                  std::to_string(s.rpm),         std::to_string(s.tpm),
                                  std::to_string(charge.tokens), std::to_string(s.max_concurrent),
                                  usd(s.budget_daily_usd),       usd(s.budget_monthly_usd),
                                  usd(s.budget_total_usd),       usd(charge.cost_usd)};
    auto r = co_await im.redis->eval(acquireScript(), kNoKeys, args);
    if (r.ok() && !r.reply.isError()) verdict = parseVerdict(r.reply);
    if (verdict) {
      im.markUp();
    } else {
      im.markDown(replyProblem(r));
    }
  }
  if (!verdict) {
    const Ms now = nowMs();
    verdict = im.local.acquire(subject, charge, now);
    if (im.redis) {
      im.fallbacks.fetch_add(1, std::memory_order_relaxed);
      if (verdict->failed == 0) im.rememberLocal(subject.id + '\n' + charge.request_id, now);
    }
  }
  auto d = decide(*verdict);
  if (!d.allowed) im.refused[static_cast<std::size_t>(d.hit)].fetch_add(1, std::memory_order_relaxed);
  co_return d;
}

net::awaitable<void> Limiter::settle(const Subject& subject, const Charge& charge, std::int64_t actual_tokens,
                                     double actual_cost_usd) {
  if (!subject.spec.any()) co_return;
  auto& im = *impl_;
  const Ms now = nowMs();
  if (!im.redis || im.takeLocal(subject.id + '\n' + charge.request_id)) {
    im.local.settle(subject, charge, actual_tokens, actual_cost_usd, now);
    co_return;
  }
  const bool budget = hasBudget(subject.spec);
  if (budget) im.local.commitSpend(subject.id, actual_cost_usd, now);
  // Tried even while Redis counts as down: a settle is off the response path, and one that is
  // lost holds a concurrency slot in Redis until its lease ends.
  std::vector<std::string> args{im.base(subject.id),           charge.request_id,  std::to_string(im.window),
                                std::to_string(actual_tokens), budget ? "1" : "0", usd(actual_cost_usd)};
  auto r = co_await im.redis->eval(settleScript(), kNoKeys, args);
  if (r.ok() && !r.reply.isError()) {
    im.markUp();
  } else {
    im.markDown(replyProblem(r));
    spdlog::debug("limiter: settle of {} for {} lost: {}", charge.request_id, subject.id, replyProblem(r));
  }
}

void Limiter::seedSpend(const std::string& subject_id, const SpendSeed& seed) {
  auto& im = *impl_;
  im.local.seed(subject_id, seed, nowMs());
  if (!im.sync) return;
  auto r = im.sync->eval(seedScript(), kNoKeys,
                         {im.base(subject_id), std::to_string(seed.day_index), std::to_string(seed.month_index),
                          usd(seed.day_usd), usd(seed.month_usd), usd(seed.total_usd)});
  if (!r.ok() || r.reply.isError())
    spdlog::warn("limiter: seeding spend of {} in Redis: {}", subject_id, replyProblem(r));
}

Spend Limiter::spend(const std::string& subject_id) {
  auto& im = *impl_;
  if (im.sync) {
    auto r = im.sync->eval(spendScript(), kNoKeys, {im.base(subject_id)});
    const auto& e = r.reply.elements;
    if (r.ok() && r.reply.type == RedisReply::Type::Array && e.size() == 4) {
      auto num = [](const RedisReply& x) { return std::strtod(x.str.c_str(), nullptr); };
      return Spend{num(e[0]), num(e[1]), num(e[2]), num(e[3])};
    }
    spdlog::warn("limiter: reading spend of {} from Redis: {}; showing this instance's counters", subject_id,
                 replyProblem(r));
  }
  return im.local.spend(subject_id, nowMs());
}

bool Limiter::redisConfigured() const {
  return impl_->redis != nullptr;
}
bool Limiter::redisUp() const {
  return impl_->redis && impl_->up.load();
}

void Limiter::renderMetrics(std::string& out) const {
  auto& im = *impl_;
  if (im.redis) {
    out += "# HELP sluice_redis_up Whether the limiter reaches Redis (0: using local counters).\n";
    out += "# TYPE sluice_redis_up gauge\n";
    out += fmt::format("sluice_redis_up {}\n", im.up.load() ? 1 : 0);
  }
  out += "# HELP sluice_limiter_fallback_total Limit checks made locally because Redis was unreachable.\n";
  out += "# TYPE sluice_limiter_fallback_total counter\n";
  out += fmt::format("sluice_limiter_fallback_total {}\n", im.fallbacks.load());
  out += "# HELP sluice_limiter_refused_total Requests refused, by the limit that refused them.\n";
  out += "# TYPE sluice_limiter_refused_total counter\n";
  for (auto k : {LimitKind::Requests, LimitKind::Tokens, LimitKind::Concurrency, LimitKind::BudgetDaily,
                 LimitKind::BudgetMonthly, LimitKind::BudgetTotal}) {
    out += fmt::format("sluice_limiter_refused_total{{limit=\"{}\"}} {}\n", limitKindName(k),
                       im.refused[static_cast<std::size_t>(k)].load());
  }
}

const char* limitKindName(LimitKind k) {
  switch (k) {
    case LimitKind::None:
      return "none";
    case LimitKind::Requests:
      return "requests";
    case LimitKind::Tokens:
      return "tokens";
    case LimitKind::Concurrency:
      return "concurrency";
    case LimitKind::BudgetDaily:
      return "budget_daily";
    case LimitKind::BudgetMonthly:
      return "budget_monthly";
    case LimitKind::BudgetTotal:
      return "budget_total";
  }
  return "none";
}

std::int64_t dayIndex(std::int64_t unix_ms) {
  return floorDiv(unix_ms, kDayMs);
}

std::int64_t monthIndex(std::int64_t unix_ms) {
  std::chrono::year_month_day ymd{std::chrono::sys_days(std::chrono::days(dayIndex(unix_ms)))};
  return (static_cast<std::int64_t>(static_cast<int>(ymd.year())) - 1970) * 12 +
         static_cast<std::int64_t>(static_cast<unsigned>(ymd.month())) - 1;
}

std::int64_t dayStartMs(std::int64_t day_index) {
  return day_index * kDayMs;
}

std::int64_t monthStartMs(std::int64_t month_index) {
  const auto years = floorDiv(month_index, 12);
  const auto month = static_cast<unsigned>(month_index - years * 12 + 1);
  std::chrono::sys_days d{std::chrono::year(static_cast<int>(1970 + years)) / std::chrono::month(month) / 1};
  return d.time_since_epoch().count() * kDayMs;
}

}  // namespace sluice::cluster
