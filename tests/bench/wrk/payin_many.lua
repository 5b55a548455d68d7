-- POST /api/sandbox/payins of 1.00 BRL, each request to the next of the subjects in PERSON_IDS (comma separated):
-- pay-ins spread over many subjects, so no one subject's lock sets the pace.
local token = os.getenv("TOKEN")
local ids = {}
for id in string.gmatch(os.getenv("PERSON_IDS"), "[^,]+") do ids[#ids + 1] = id end
local n = 0
local headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }

function init(args)
  n = math.random(1, #ids)
end

request = function()
  n = n % #ids + 1
  return wrk.format("POST", "/api/sandbox/payins", headers,
    string.format('{"subject_id":"%s","value":"1.00","currency":"BRL"}', ids[n]))
end
