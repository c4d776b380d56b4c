// report.html: one self-contained file (no network, no CDN): static tables written here, plots
// drawn as inline SVG by a small script from the data embedded in the page.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "reports/printers.hpp"

namespace dsa::reports {

namespace {

using nlohmann::json;

constexpr size_t kMaxSeries = 24;      // agreement panels drawn (one per ranked comparison)
constexpr size_t kMaxPoints = 4000;    // points per series

const char* kStyle = R"CSS(
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1 .passed{color:#1a7f37} h1 .incorrect{color:#cf222e} h1 .inconclusive{color:#9a6700}
table{border-collapse:collapse;margin:8px 0 16px} td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f4f4f4} tr.incorrect td{background:#ffebe9} tr.inconclusive td{background:#fff8c5}
code{font-size:12px} figure{display:inline-block;margin:8px 16px 8px 0;vertical-align:top}
figcaption{font-weight:600} svg{border:1px solid #ddd;background:#fff} .env{color:#555}
details{margin:6px 0} .mono{font-family:monospace;font-size:12px}
)CSS";

// Draws every svg[data-plot] from the JSON in #dsa-data. Each data series is a path.data, so a
// test can check that the plots rendered; an empty plot says "no data".
const char* kScript = R"JS(
(function(){
var D=JSON.parse(document.getElementById('dsa-data').textContent);
var NS='http://www.w3.org/2000/svg', W=640, H=260, L=56, R=12, T=14, B=34;
var COL=['#0969da','#cf222e','#1a7f37','#8250df','#bf8700','#1b7c83','#d1242f','#57606a'];
function el(svg,tag,attrs,text){var e=document.createElementNS(NS,tag);for(var k in attrs)e.setAttribute(k,attrs[k]);if(text!==undefined)e.textContent=text;svg.appendChild(e);return e;}
function fmt(v){return Math.abs(v)>=1000||(Math.abs(v)<0.01&&v!==0)?v.toExponential(1):(+v.toFixed(3)).toString();}
function frame(svg,x0,x1,y0,y1,xl,yl){
  if(x1<=x0)x1=x0+1; if(y1<=y0)y1=y0+1;
  var sx=function(x){return L+(x-x0)/(x1-x0)*(W-L-R);}, sy=function(y){return H-B-(y-y0)/(y1-y0)*(H-T-B);};
  el(svg,'path',{d:'M'+L+','+T+'V'+(H-B)+'H'+(W-R),stroke:'#888',fill:'none','class':'axis'});
  for(var i=0;i<=4;i++){var yv=y0+(y1-y0)*i/4, xv=x0+(x1-x0)*i/4;
    el(svg,'text',{x:L-4,y:sy(yv)+4,'text-anchor':'end','font-size':10},fmt(yv));
    el(svg,'text',{x:sx(xv),y:H-B+14,'text-anchor':'middle','font-size':10},fmt(xv));}
  el(svg,'text',{x:(W+L)/2,y:H-4,'text-anchor':'middle','font-size':11},xl);
  el(svg,'text',{x:12,y:T+(H-T-B)/2,'font-size':11,transform:'rotate(-90 12 '+(T+(H-T-B)/2)+')','text-anchor':'middle'},yl);
  return {x:sx,y:sy};
}
function empty(svg,msg){el(svg,'text',{x:W/2,y:H/2,'text-anchor':'middle','class':'nodata'},msg||'no data');}
function range(vals){var lo=Infinity,hi=-Infinity;vals.forEach(function(v){if(v<lo)lo=v;if(v>hi)hi=v;});return [lo,hi];}
function series(svg,ser,xl,yl,dots,ylo){
  var xs=[],ys=[];ser.forEach(function(s){s.points.forEach(function(p){xs.push(p[0]);ys.push(p[1]);});});
  if(!xs.length){empty(svg);return;}
  var xr=range(xs),yr=range(ys); if(ylo!==undefined)yr[0]=Math.min(yr[0],ylo);
  var f=frame(svg,xr[0],xr[1],yr[0],yr[1]+(yr[1]-yr[0])*0.05,xl,yl);
  ser.forEach(function(s,i){var d='';
    s.points.forEach(function(p,j){var x=f.x(p[0]).toFixed(1),y=f.y(p[1]).toFixed(1);
      d+=dots?'M'+x+','+y+'h0.01':(j?'L':'M')+x+','+y;});
    var p=el(svg,'path',{d:d,'class':'data',stroke:COL[i%COL.length],fill:'none','stroke-width':dots?4:1.5,'stroke-linecap':'round'});
    el(p,'title',{},s.name);
    // The legend sits right of the plot area (R leaves room for it), never over the data.
    if(i<16)el(svg,'text',{x:W-R+8,y:T+8+12*i,'font-size':10,fill:COL[i%COL.length]},s.name);
    else if(i===16)el(svg,'text',{x:W-R+8,y:T+8+12*i,'font-size':10},'+'+(ser.length-16)+' more (hover a line)');});
}
function histogram(svg,vals,xl){
  if(!vals.length){empty(svg);return;}
  var r=range(vals),n=24,w=(r[1]-r[0])/n||1,c=new Array(n).fill(0);
  vals.forEach(function(v){c[Math.min(n-1,Math.floor((v-r[0])/w))]++;});
  var f=frame(svg,r[0],r[0]+w*n,0,Math.max.apply(null,c),xl,'rows'),d='';
  c.forEach(function(k,i){if(!k)return;var x0=f.x(r[0]+i*w),x1=f.x(r[0]+(i+1)*w),y=f.y(k),y0=f.y(0);
    d+='M'+x0.toFixed(1)+','+y0.toFixed(1)+'V'+y.toFixed(1)+'H'+x1.toFixed(1)+'V'+y0.toFixed(1)+'Z';});
  el(svg,'path',{d:d,'class':'data',fill:'#0969da',stroke:'#fff'});
  if(r[0]<0){var x=f.x(0);el(svg,'path',{d:'M'+x+','+T+'V'+(H-B),stroke:'#cf222e','stroke-dasharray':'4 3','class':'zero'});}
}
function kernels(svg,ks){
  if(!ks.length){empty(svg,'no kernel timings in this run');return;}
  H=Math.max(260,T+B+16*ks.length);
  // Log scale: kernels of a few microseconds and of milliseconds, and their floors, side by side.
  var lo=Infinity,hi=0;ks.forEach(function(k){[k.min,k.floor].forEach(function(v){if(v>0&&v<lo)lo=v;});hi=Math.max(hi,k.max,k.floor);});
  if(!(hi>0)){empty(svg,'no kernel timings in this run');return;}
  if(!(lo<hi))lo=hi/10;
  var d0=Math.floor(Math.log10(lo)),d1=Math.ceil(Math.log10(hi));if(d1<=d0)d1=d0+1;
  var X=function(v){v=Math.max(v,Math.pow(10,d0));return L+(Math.log10(v)-d0)/(d1-d0)*(W-L-R);};
  el(svg,'path',{d:'M'+L+','+T+'V'+(H-B)+'H'+(W-R),stroke:'#888',fill:'none','class':'axis'});
  for(var e=d0;e<=d1;e++){el(svg,'text',{x:X(Math.pow(10,e)),y:H-B+14,'text-anchor':'middle','font-size':10},'1e'+e);
    el(svg,'path',{d:'M'+X(Math.pow(10,e))+','+T+'V'+(H-B),stroke:'#eee','class':'grid'});}
  el(svg,'text',{x:(W+L)/2,y:H-4,'text-anchor':'middle','font-size':11},'ms, log scale (bar: min..max, dark mark: median, grey: floor)');
  var rowH=(H-T-B)/ks.length,d='',fl='';
  ks.forEach(function(k,i){var y=T+rowH*(i+0.5),h=Math.max(2,rowH*0.5);
    d+='M'+X(k.min).toFixed(1)+','+(y-h/2).toFixed(1)+'H'+Math.max(X(k.max),X(k.min)+1).toFixed(1)+'v'+h.toFixed(1)+'H'+X(k.min).toFixed(1)+'Z';
    d+='M'+X(k.median).toFixed(1)+','+(y-h).toFixed(1)+'v'+(2*h).toFixed(1);
    if(k.floor>0)fl+='M'+X(k.floor).toFixed(1)+','+(y-h).toFixed(1)+'v'+(2*h).toFixed(1);
    el(svg,'text',{x:L-4,y:y+3,'text-anchor':'end','font-size':9},k.name.length>40?k.name.slice(0,39)+'…':k.name);});
  el(svg,'path',{d:d,'class':'data',fill:'#0969da',stroke:'#0a3069'});
  if(fl)el(svg,'path',{d:fl,'class':'floor',stroke:'#888','stroke-width':3});
}
// Per-row agreement as small multiples: one panel per comparison, each with its own zoomed axis
// (everything happens between 0.95 and 1), its name above the plot instead of a legend over the
// data, and the rule's pass line dashed.
function panels(svg,ser){
  if(!ser.length){empty(svg);return;}
  var cols=Math.min(3,ser.length),PW=300,PH=170,pl=44,pr=10,pt=30,pb=26;
  W=cols*PW;H=Math.ceil(ser.length/cols)*PH;
  ser.forEach(function(s,i){
    var ox=(i%cols)*PW,oy=Math.floor(i/cols)*PH,xs=[],ys=[];
    s.points.forEach(function(p){xs.push(p[0]);ys.push(p[1]);});
    el(svg,'text',{x:ox+pl,y:oy+14,'font-size':11,'font-weight':600},s.name.length>44?s.name.slice(0,43)+'…':s.name);
    if(!xs.length){el(svg,'text',{x:ox+PW/2,y:oy+PH/2,'text-anchor':'middle','class':'nodata'},'no rows');return;}
    var xr=range(xs),lo=Math.min(range(ys)[0],s.threshold);
    var y0=Math.max(0,Math.floor((lo-0.005)*100)/100),y1=1.0025;if(xr[1]<=xr[0])xr[1]=xr[0]+1;
    var X=function(x){return ox+pl+(x-xr[0])/(xr[1]-xr[0])*(PW-pl-pr);},Y=function(y){return oy+pt+(y1-y)/(y1-y0)*(PH-pt-pb);};
    el(svg,'path',{d:'M'+(ox+pl)+','+(oy+pt)+'V'+(oy+PH-pb)+'H'+(ox+PW-pr),stroke:'#888',fill:'none','class':'axis'});
    [y0,(y0+1)/2,1].forEach(function(v){el(svg,'text',{x:ox+pl-4,y:Y(v)+3,'text-anchor':'end','font-size':9},fmt(v));
      el(svg,'path',{d:'M'+(ox+pl)+','+Y(v).toFixed(1)+'H'+(ox+PW-pr),stroke:'#eee','class':'grid'});});
    [xr[0],xr[1]].forEach(function(v){el(svg,'text',{x:X(v),y:oy+PH-pb+12,'text-anchor':'middle','font-size':9},fmt(v));});
    el(svg,'text',{x:ox+(PW+pl)/2,y:oy+PH-4,'text-anchor':'middle','font-size':9},'row');
    if(s.threshold<1&&s.threshold>=y0)el(svg,'path',{d:'M'+(ox+pl)+','+Y(s.threshold).toFixed(1)+'H'+(ox+PW-pr),
      stroke:'#cf222e','stroke-dasharray':'4 3','class':'threshold'});
    var d='',below=0;s.points.forEach(function(p){d+='M'+X(p[0]).toFixed(1)+','+Y(p[1]).toFixed(1)+'h0.01';if(p[1]<s.threshold)below++;});
    var path=el(svg,'path',{d:d,'class':'data',stroke:below?'#cf222e':'#0969da',fill:'none','stroke-width':4,'stroke-linecap':'round'});
    el(path,'title',{},s.name+': '+s.points.length+' rows, '+below+' below '+s.threshold);});
}
var plots=document.querySelectorAll('svg[data-plot]');
plots.forEach(function(svg){H=260;L=56;W=640;R=12;
  var k=svg.getAttribute('data-plot');
  if(k==='agreement')panels(svg,D.agreement);
  else if(k==='floor-margins')histogram(svg,D.margins,'floor margin (score - floor) / |floor|');
  else if(k==='kernel-latency'){L=250;W=900;kernels(svg,D.kernels);}
  else if(k==='latency-context'){W=1000;R=360;H=Math.max(260,T+B+12*Math.min(D.context.length+1,17));
    series(svg,D.context,'context (max L)','median ms',false,0);}
  svg.setAttribute('viewBox','0 0 '+W+' '+H);svg.setAttribute('width',W);svg.setAttribute('height',H);});
document.body.setAttribute('data-plots','rendered');
})();
)JS";

bool ranked_rule(Rule rule) { return rule != Rule::quality; }

json agreement_series(const Report& r) {
  json out = json::array();
  for (const CaseResult& c : r.cases) {
    for (const CaseComparison& cmp : c.comparisons) {
      if (!ranked_rule(cmp.rule) || out.size() >= kMaxSeries) continue;
      for (const LayerComparison& part : cmp.parts) {
        if (part.rows.empty() || part.layer.find('/') != std::string::npos) continue;
        json pts = json::array();
        for (size_t i = 0; i < part.rows.size() && i < kMaxPoints; ++i)
          pts.push_back({part.rows[i].row, part.rows[i].agreement});
        // The per-row pass line of the rule: 95 % for the public test, every pick for own-path.
        const double threshold = cmp.rule == Rule::public_test ? 0.95 : 1.0;
        out.push_back({{"name", c.impl + " vs " + cmp.against + " @" + c.layer}, {"points", pts}, {"threshold", threshold}});
      }
    }
  }
  return out;
}

json floor_margins(const Report& r) {
  json out = json::array();
  for (const CaseResult& c : r.cases)
    for (const CaseComparison& cmp : c.comparisons)
      if (cmp.rule == Rule::public_test)
        for (const LayerComparison& part : cmp.parts)
          for (const RowFigure& row : part.rows)
            if (std::isfinite(row.floor_margin)) out.push_back(row.floor_margin);
  return out;
}

// The latency plots show the GPU implementations' kernels when any were timed (the CPU
// references' stage timings would drown them), else whatever was timed.
bool plotted(const Report& r, const ImplRun& run) {
  const bool any_gpu = std::any_of(r.runs.begin(), r.runs.end(),
                                   [](const ImplRun& x) { return x.device != "cpu" && !x.kernels.empty(); });
  return !any_gpu || run.device != "cpu";
}

json kernel_bars(const Report& r) {
  json out = json::array();
  for (const ImplRun& run : r.runs) {
    if (!plotted(r, run)) continue;
    for (const KernelFigure& k : run.kernels)
      out.push_back({{"name", run.impl + " " + k.kernel + " @" + k.layer + " [" + run.batch_id.substr(0, 8) + "]"},
                     {"median", k.median_ms}, {"min", k.min_ms}, {"max", k.max_ms}, {"floor", k.floor_ms}});
  }
  return out;
}

// One series per implementation kernel and layer, one point per batch: its context and median.
json context_series(const Report& r) {
  std::map<std::string, int> context;
  for (const InputInfo& in : r.inputs) context[in.batch_id] = in.max_len;
  std::map<std::string, json> series;
  for (const ImplRun& run : r.runs) {
    if (!plotted(r, run)) continue;
    for (const KernelFigure& k : run.kernels)
      series[run.impl + " " + k.kernel + " @" + k.layer].push_back({context[run.batch_id], k.median_ms});
  }
  json out = json::array();
  for (auto& [name, pts] : series) {
    std::sort(pts.begin(), pts.end());
    out.push_back({{"name", name}, {"points", pts}});
  }
  return out;
}

bool contexts_differ(const Report& r) {
  std::set<int> contexts;
  for (const InputInfo& in : r.inputs)
    for (const ImplRun& run : r.runs)
      if (run.batch_id == in.batch_id && !run.kernels.empty()) contexts.insert(in.max_len);
  return contexts.size() > 1;
}

void header(std::ostringstream& h, const Report& r) {
  const EnvironmentInfo& e = r.environment;
  const std::string v = disposition_name(r.verdict);
  h << "<h1>dsa-harness: <span class=\"" << xml_escape(r.verdict == Disposition::passed ? "passed" : v) << "\">"
    << xml_escape(v) << "</span> (exit " << r.exit_code << ")</h1>\n<p class=\"env\">GPU " << xml_escape(e.gpu);
  if (!e.driver.empty()) h << ", driver " << xml_escape(e.driver);
  if (!e.cuda.empty()) h << ", CUDA " << xml_escape(e.cuda);
  if (!e.sm_clock.empty()) h << ", SM clock " << xml_escape(e.sm_clock);
  h << "; host " << xml_escape(e.host) << "; harness " << xml_escape(e.version) << " (" << xml_escape(e.commit)
    << "); started " << xml_escape(e.started_at) << "; rows " << xml_escape(r.settings.rows) << ", seed "
    << r.settings.seed << ", tolerance " << format_number(r.settings.tolerance) << "</p>\n";
  h << "<h2>Inputs</h2>\n<table><tr><th>batch</th><th>file</th><th>requests</th><th>rows</th><th>max L</th>"
       "<th>topk</th><th>layers</th></tr>\n";
  for (const InputInfo& in : r.inputs) {
    std::string layers;
    for (int id : in.layers) layers += (layers.empty() ? "" : " ") + std::to_string(id);
    h << "<tr><td class=\"mono\">" << xml_escape(in.batch_id) << "</td><td>" << xml_escape(in.path) << "</td><td>"
      << in.requests << "</td><td>" << in.rows << "</td><td>" << in.max_len << "</td><td>" << in.topk << "</td><td>"
      << layers << "</td></tr>\n";
  }
  h << "</table>\n";
}

void cases_table(std::ostringstream& h, const Report& r) {
  h << "<h2>Cases</h2>\n<table><tr><th>case</th><th>verdict</th><th>agreement mean</th><th>agreement min</th>"
       "<th>failed metric</th><th>first mismatch</th></tr>\n";
  for (const CaseResult& c : r.cases) {
    const std::string v = disposition_name(c.verdict);
    h << "<tr class=\"" << xml_escape(c.verdict == Disposition::passed ? "passed" : v) << "\"><td class=\"mono\">"
      << xml_escape(c.id) << "</td><td>" << xml_escape(v) << "</td><td>"
      << format_number(case_record(c, "agreement.mean")) << "</td><td>" << format_number(case_record(c, "agreement.min"))
      << "</td><td>" << xml_escape(c.failed_metric) << "</td><td>" << xml_escape(c.message);
    if (c.verdict != Disposition::passed) h << "<br><code>" << xml_escape(c.rerun) << "</code>";
    h << "</td></tr>\n";
  }
  h << "</table>\n";
  h << "<h2>Implementation runs</h2>\n<table><tr><th>batch</th><th>implementation</th><th>device</th><th>status</th>"
       "<th>rows</th><th>deterministic</th></tr>\n";
  for (const ImplRun& run : r.runs)
    h << "<tr><td class=\"mono\">" << xml_escape(run.batch_id) << "</td><td>" << xml_escape(run.impl) << "</td><td>"
      << xml_escape(run.device) << "</td><td>" << xml_escape(disposition_name(run.status)) << " "
      << xml_escape(run.reason) << "</td><td>" << run.rows << "</td><td>"
      << (run.deterministic < 0 ? "-" : run.deterministic ? "yes" : "NO") << "</td></tr>\n";
  h << "</table>\n";
}

std::string positions_text(const std::vector<ScoredPosition>& list) {
  std::ostringstream s;
  for (const ScoredPosition& p : list)
    s << (s.tellp() ? ", " : "") << p.position << " (" << format_number(p.score) << ", margin "
      << format_number(p.margin, 3) << ")";
  return s.str();
}

void worst_rows(std::ostringstream& h, const Report& r) {
  h << "<h2>Worst rows</h2>\n";
  bool any = false;
  for (const CaseResult& c : r.cases) {
    if (c.worst.empty()) continue;
    any = true;
    h << "<details" << (c.verdict == Disposition::incorrect ? " open" : "") << "><summary class=\"mono\">"
      << xml_escape(c.id) << " (" << xml_escape(disposition_name(c.verdict)) << ")</summary>\n"
      << "<table class=\"worst\"><tr><th>row</th><th>L</th><th>agreement</th><th>floor margin</th><th>k-th score</th>"
         "<th>reference scores around the k-th (rank k-3..k+3)</th><th>missed</th><th>extra</th></tr>\n";
    for (const WorstRow& w : c.worst)
      h << "<tr><td>" << w.row << "</td><td>" << w.length << "</td><td>" << format_number(w.agreement) << "</td><td>"
        << format_number(w.floor_margin, 3) << "</td><td>" << format_number(w.kth_score) << "</td><td class=\"mono\">"
        << xml_escape(positions_text(w.around_kth)) << "</td><td class=\"mono\">" << xml_escape(positions_text(w.missed))
        << "</td><td class=\"mono\">" << xml_escape(positions_text(w.extra)) << "</td></tr>\n";
    h << "</table></details>\n";
  }
  if (!any) h << "<p>No row differs from its reference.</p>\n";
}

// JSON inside <script>: "</" would end the element early.
std::string script_safe(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') out += "<\\";
    else out += text[i];
  }
  return out;
}

}  // namespace

std::string to_html(const Report& report) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dsa-harness report</title>"
    << "<style>" << kStyle << "</style></head>\n<body>\n";
  header(h, report);
  h << "<h2>Plots</h2>\n"
    << "<figure><figcaption>Per-row agreement (a panel per ranked comparison; dashed: the rule's pass line)</figcaption><svg data-plot=\"agreement\"></svg></figure>\n"
    << "<figure><figcaption>Floor margins (public-test rule)</figcaption><svg data-plot=\"floor-margins\"></svg></figure>\n"
    << "<figure><figcaption>Latency per kernel against its floor</figcaption><svg data-plot=\"kernel-latency\"></svg></figure>\n";
  const bool by_context = contexts_differ(report);
  if (by_context)
    h << "<figure><figcaption>Latency against context length</figcaption><svg data-plot=\"latency-context\"></svg></figure>\n";
  cases_table(h, report);
  worst_rows(h, report);
  json data = {{"agreement", agreement_series(report)}, {"margins", floor_margins(report)},
               {"kernels", kernel_bars(report)}, {"context", by_context ? context_series(report) : json::array()}};
  h << "<script type=\"application/json\" id=\"dsa-data\">" << script_safe(data.dump()) << "</script>\n"
    << "<script>" << kScript << "</script>\n</body></html>\n";
  return h.str();
}

}  // namespace dsa::reports
