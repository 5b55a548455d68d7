-- POST /api/v1/subject/people with a fresh valid CPF and a fresh Idempotency-Key per request: every call claims a
-- key, inserts a new person and stores its answer (tests/bench/idempotency_seal.ts).
local token = os.getenv("TOKEN")
local counter = 0
local thread_tag = ""

local cpf = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "cpf.lua")

function init(args)
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
  thread_tag = string.format("%08x%08x", math.random(0, 0x7fffffff), math.random(0, 0x7fffffff))
end

request = function()
  counter = counter + 1
  local body = string.format(
    '{"person":{"document_number":"%s","document_type":"cpf","social_name":"Bench Person","fiscal_country":"BRA","net_monthly_average_income":"2500.00","address_state":"SP"}}',
    cpf())
  return wrk.format("POST", "/api/v1/subject/people", {
    ["Authorization"] = "Bearer " .. token,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = thread_tag .. "-" .. counter,
  }, body)
end
