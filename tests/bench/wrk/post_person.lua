-- POST /api/v1/subject/people with a fresh valid CPF per request, so every call inserts a new person.
local token = os.getenv("TOKEN")

local function cpf()
  local d = {}
  for i = 1, 9 do d[i] = math.random(0, 9) end
  for _, n in ipairs({ 10, 11 }) do
    local sum = 0
    for i = 1, n - 1 do sum = sum + d[i] * (n + 1 - i) end
    local r = (sum * 10) % 11
    if r == 10 then r = 0 end
    d[n] = r
  end
  return table.concat(d)
end

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
