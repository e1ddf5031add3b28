# Sourced by the benchmarks. Every call still spends from its rate-limit budget in Redis (the
# limiter's cost is part of what they measure), but under tiers no benchmark exhausts.
# RATE_LIMITS=off turns the limiter off, to measure what it adds.
if [ "${RATE_LIMITS:-on}" = off ]; then
  export OTC__RATE_LIMITS__ENABLED=false
else
  export OTC__RATE_LIMITS__ENABLED=true
fi
for class in BULK EXECUTE ADMIN DELETE WRITE READ SYNC; do
  export "OTC__RATE_LIMITS__TIERS__${class}__PER_MINUTE=100000000" "OTC__RATE_LIMITS__TIERS__${class}__BURST=100000000"
done
