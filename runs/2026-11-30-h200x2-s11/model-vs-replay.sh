SYS=configs/systems/h200-2x-nvlink.yaml
declare -A SETS=([base]="" [fusion]="--set fusion.allreduce_residual_norm=true" [split]="--set collectives.allreduce_split=true" [ep]="--set parallel.ep=2")
for t in base fusion split ep; do
  build/vpsim model configs/default.yaml --system $SYS --set parallel.tp=2 --set system.gpu.memory_gib=1000 ${SETS[$t]} --format json --out /tmp/m-$t.json 2>/dev/null
done
python3 - <<'PY'
import json,os
rows=[]
base_meas={};base_mod={}
print(f"{'item':7s} {'backend':8s} {'cycle meas':>10s} {'model':>7s} {'err':>6s} | {'comm meas':>9s} {'model':>6s} {'err':>6s} | {'d meas':>7s} {'d model':>7s}")
for t in ['base','fusion','split','ep']:
    m=json.load(open(f'/tmp/m-{t}.json')); mb={b['backend']:b for b in m['backends']}
    for be in ['nccl','oneshot','twoshot','push','mpi']:
        f=f'/tmp/s11b/run-{t}-{be}.json'
        if not os.path.exists(f): continue
        r=json.load(open(f))['backends'][0]
        meas=r['cycle_ms']; mm=mb[be]['cycle_ms']-mb[be]['host_ms']
        cm=r['verify_comm_ms']; cmod=mb[be]['verify_comm_ms']
        if t=='base': base_meas[be]=meas; base_mod[be]=mm
        dm=meas-base_meas.get(be,meas); dmod=mm-base_mod.get(be,mm)
        print(f"{t:7s} {be:8s} {meas:10.3f} {mm:7.3f} {100*(mm-meas)/meas:+5.1f}% | {cm:9.3f} {cmod:6.3f} {100*(cmod-cm)/cm if cm else 0:+5.1f}% | {dm:+7.3f} {dmod:+7.3f}")
PY
