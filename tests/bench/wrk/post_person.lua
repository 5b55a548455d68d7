-- POST /api/v1/subject/people with a fresh valid CPF per request, so every call inserts a new person.
local token = os.getenv("TOKEN")

local cpf = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "cpf.lua")

function init(args)
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
end

request = function()
  local body = string.format(
    '{"person":{"document_number":"%s","document_type":"cpf","social_name":"Bench Person","fiscal_country":"BRA","net_monthly_average_income":"2500.00","address_state":"SP"}}',
    cpf())
  return wrk.format("POST", "/api/v1/subject/people",
    { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }, body)
end
