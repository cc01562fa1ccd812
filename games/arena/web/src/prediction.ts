// The page's prediction (docs/PREDICTION.md, "In the browser"): the arena's own flight and gun
// systems, compiled to WebAssembly beside the page (arena_prediction.js and .wasm, which
// arena-server serves with it), run by the SDK's Prediction. ?prediction=off plays without it,
// to compare; ?arena-size=N tells it the server's --arena-size (its walls; 4000 by default).
import { Prediction, type PredictionModuleFactory } from '@ecsnet/client';

export interface PredictionChoice {
  prediction: Prediction | null;
  why: string; // why there is none, else empty
}

export const DEFAULT_ARENA_SIZE = 4000;

// The module's loader is a classic script (Emscripten's MODULARIZE): it defines
// createPredictionModule on the page.
function loadScript(src: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const script = document.createElement('script');
    script.src = src;
    script.onload = () => resolve();
    script.onerror = () => reject(new Error(`cannot load ${src}`));
    document.head.appendChild(script);
  });
}

export async function loadPrediction(params: URLSearchParams): Promise<PredictionChoice> {
  if (params.get('prediction') === 'off') return { prediction: null, why: 'off (?prediction=off)' };
  const size = Number(params.get('arena-size') ?? DEFAULT_ARENA_SIZE);
  if (!(size > 0)) return { prediction: null, why: `off: ?arena-size=${params.get('arena-size')} is not a positive number` };
  try {
    await loadScript(new URL('arena_prediction.js', document.baseURI).href);
    const factory = (globalThis as unknown as { createPredictionModule?: PredictionModuleFactory }).createPredictionModule;
    if (factory === undefined) throw new Error('arena_prediction.js defines no createPredictionModule');
    const prediction = await Prediction.load(factory, { locateFile: (file: string) => new URL(file, document.baseURI).href },
      { config: `size=${size}` });
    return { prediction, why: '' };
  } catch (e) {
    // The page still plays, as before prediction (a server built without ECSNET_WASM).
    return { prediction: null, why: `off: ${(e as Error).message}` };
  }
}
